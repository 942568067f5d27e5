"""The agent host's side: the hook's answer, the session ledger's events, trust,
telemetry and its replay, `init` and `doctor`.

Public names, for the front ends; engine modules import modules, not these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.engine._lazy import lazy_exports

# public name -> the module of this package that defines it ("<module>": the module itself)
_EXPORTS: dict[str, str] = {
    "Replay": "history",
    "SetupError": "setup",
    "SkillUsage": "history",
    "TELEMETRY_FILE": "telemetry",
    "UsageReport": "history",
    "add_trusted": "trust",
    "diagnose": "doctor",
    "event_command": "setup",
    "hook_command": "setup",
    "install_hook": "setup",
    "is_control_payload": "hook",
    "is_trusted": "trust",
    "pipeline_decider": "history",
    "read_events": "telemetry",
    "remove_trusted": "trust",
    "replay_json": "history",
    "replay_sessions": "history",
    "report_json": "history",
    "settings_path": "setup",
    "trust_file": "trust",
    "trusted": "trust",
    "usage_report": "history",
    "wired_commands": "setup",
}
__all__ = sorted(_EXPORTS)
if TYPE_CHECKING:
    from explorer.engine.host.doctor import diagnose as diagnose
    from explorer.engine.host.history import Replay as Replay
    from explorer.engine.host.history import SkillUsage as SkillUsage
    from explorer.engine.host.history import UsageReport as UsageReport
    from explorer.engine.host.history import pipeline_decider as pipeline_decider
    from explorer.engine.host.history import replay_json as replay_json
    from explorer.engine.host.history import replay_sessions as replay_sessions
    from explorer.engine.host.history import report_json as report_json
    from explorer.engine.host.history import usage_report as usage_report
    from explorer.engine.host.hook import is_control_payload as is_control_payload
    from explorer.engine.host.setup import SetupError as SetupError
    from explorer.engine.host.setup import event_command as event_command
    from explorer.engine.host.setup import hook_command as hook_command
    from explorer.engine.host.setup import install_hook as install_hook
    from explorer.engine.host.setup import settings_path as settings_path
    from explorer.engine.host.setup import wired_commands as wired_commands
    from explorer.engine.host.telemetry import TELEMETRY_FILE as TELEMETRY_FILE
    from explorer.engine.host.telemetry import read_events as read_events
    from explorer.engine.host.trust import add_trusted as add_trusted
    from explorer.engine.host.trust import is_trusted as is_trusted
    from explorer.engine.host.trust import remove_trusted as remove_trusted
    from explorer.engine.host.trust import trust_file as trust_file
    from explorer.engine.host.trust import trusted as trusted
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
