"""A repository's skill-explorer.toml reaches the hook only once its directory is trusted.

Cloning a repository must not let it redirect the cache, point the models at its own
files, or deny and force skills. The user trusts a directory (`skill-explorer trust DIR`),
as editors ask before applying workspace settings.
"""

from __future__ import annotations

import io
import json
import os
import shlex
from pathlib import Path

import pytest

from explorer.cli import main
from explorer.cli.commands.hook import run_hook
from explorer.engine.base.config import load_config
from explorer.engine.host.doctor import diagnose
from explorer.engine.host.trust import add_trusted, is_trusted, remove_trusted, trust_file, trusted
from tests.conftest import SAMPLE_SKILLS

PROMPT = "merge these report.pdf files and extract the tables"


def hostile_repo(tmp_path: Path, name: str = "cloned-repo") -> Path:
    repo = tmp_path / name
    repo.mkdir()
    (repo / "skill-explorer.toml").write_text(
        f'deny = ["pdf"]\ncache_dir = "{tmp_path / "elsewhere"}"\n', encoding="utf-8"
    )
    return repo


def hook(repo: Path, cache: Path) -> tuple[int, str, str]:
    """The hook run from `repo`, through `cache` (the run's warm one: what is tested is the
    trust of the project's config, and the reranker's optimised graph is then made once)."""
    out, err = io.StringIO(), io.StringIO()
    payload = json.dumps({"prompt": PROMPT, "cwd": str(repo), "session_id": "s"})
    code = run_hook(
        io.StringIO(payload),
        out,
        err,
        cli_roots=(str(SAMPLE_SKILLS),),
        assignments=("model=bow",),
        cache_dir=str(cache),
    )
    return code, out.getvalue(), err.getvalue()


def injected(out: str) -> str:
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


def test_an_untrusted_project_config_is_ignored_by_the_hook(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    repo = hostile_repo(tmp_path)
    code, out, err = hook(repo, warm_cache_dir)
    assert code == 0 and "- pdf " in injected(out)  # deny = ["pdf"] did not apply
    assert "not trusted" in err and str(repo) in err and "skill-explorer trust" in err
    assert not (tmp_path / "elsewhere").exists()  # cache_dir was not redirected


def test_the_trust_hint_is_sanitised_and_quoted(tmp_path: Path, warm_cache_dir: Path) -> None:
    """The payload's cwd is the host's, and a repository's name is anyone's: on stderr it
    is shown, never sent, and the command suggested runs on that directory alone."""
    repo = hostile_repo(tmp_path, "repo; rm -rf ~ \x1b]52;c;ZWNobw==\x07$(id)")
    code, _, err = hook(repo, warm_cache_dir)
    assert code == 0 and "not trusted" in err
    assert "\x1b" not in err and "\x07" not in err and "␛]52;c;ZWNobw==␇" in err
    line = next(line for line in err.splitlines() if "skill-explorer trust" in line)
    command = line.split("run: ", 1)[1]
    quoted = shlex.quote(str(repo)).replace("\x1b", "␛").replace("\x07", "␇")
    assert command == f"skill-explorer trust {quoted}"
    assert shlex.split(command)[2:] == [str(repo).replace("\x1b", "␛").replace("\x07", "␇")]


def test_a_trusted_project_config_applies(tmp_path: Path, warm_cache_dir: Path) -> None:
    repo = hostile_repo(tmp_path)
    add_trusted(repo)
    code, out, err = hook(repo, warm_cache_dir)
    assert code == 0 and "- pdf " not in injected(out)
    assert "not trusted" not in err


def test_trust_is_by_real_path_and_covers_subdirectories(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path)
    (repo / "sub").mkdir()
    link = tmp_path / "link"
    os.symlink(repo, link)
    assert not is_trusted(repo)
    add_trusted(link)
    assert is_trusted(repo) and is_trusted(repo / "sub") and is_trusted(link)
    assert not is_trusted(tmp_path)
    assert not is_trusted(tmp_path / "cloned-repo-2")  # a prefix is not a parent
    assert remove_trusted(repo) and not is_trusted(repo)


def test_the_trust_list_lives_in_the_user_config_dir_and_survives_bad_lines(
    tmp_path: Path,
) -> None:
    path = trust_file()
    assert path.parent == Path(os.environ["XDG_CONFIG_HOME"]) / "skill-explorer"
    path.parent.mkdir(parents=True)
    path.write_text("# comment\nrelative/dir\n\n/" + "x" * 10 + "\n", encoding="utf-8")
    assert trusted() == ["/" + "x" * 10]
    add_trusted(tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# comment\n") and str(tmp_path.resolve()) in text


def test_cli_does_not_need_trust_the_user_ran_it_there(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path)
    loaded = load_config(cwd=repo)
    assert loaded.config.deny == ["pdf"]


def test_trust_command_adds_lists_and_removes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = hostile_repo(tmp_path)
    monkeypatch.chdir(repo)
    assert main(["trust"]) == 0
    assert is_trusted(repo) and str(repo.resolve()) in capsys.readouterr().out
    assert main(["trust", "--list"]) == 0
    assert capsys.readouterr().out.strip().splitlines() == [str(repo.resolve())]
    assert main(["trust", "--remove", str(repo)]) == 0
    assert not is_trusted(repo)
    assert main(["trust", "--remove", str(repo)]) == 1  # was not trusted: said, and exit 1
    assert "not in the trust list" in capsys.readouterr().err
    assert main(["trust", str(tmp_path / "missing")]) == 2


def test_trusting_the_home_directory_or_above_it_needs_all_under(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trust covers every directory under the one trusted: the home directory (or the root)
    would let any repository cloned under it configure the hook, so it takes --all-under."""
    home = tmp_path / "home"
    (home / "code").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for directory in (home, tmp_path, Path("/")):
        assert main(["trust", str(directory)]) == 2
        assert "holds your home directory" in capsys.readouterr().err
        assert not is_trusted(home / "code")
    assert main(["trust", str(home / "code")]) == 0  # a project under home: as ever
    assert "and every directory under it" in capsys.readouterr().out
    assert main(["trust", "--all-under", str(home)]) == 0 and is_trusted(home / "elsewhere")


def test_doctor_shows_whether_the_project_config_is_trusted(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    repo = hostile_repo(tmp_path)
    cache = str(warm_cache_dir)
    report = diagnose(load_config(cwd=repo), (str(SAMPLE_SKILLS),), cwd=repo, cache_dir=cache)
    [line] = [check for check in report.checks if "trust" in check.message]
    assert line.status == "warning" and "the hook ignores it" in line.message
    add_trusted(repo)
    report = diagnose(load_config(cwd=repo), (str(SAMPLE_SKILLS),), cwd=repo, cache_dir=cache)
    [line] = [check for check in report.checks if "trust" in check.message]
    assert line.status == "info" and "trusted" in line.message
