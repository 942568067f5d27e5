"""Print a pip constraints file that pins every runtime dependency to its declared lower bound.

The CI job that installs these proves the bounds in pyproject.toml are true: the code and
its tests work with the oldest versions a user's resolver may legally pick.
"""

import re
import sys
import tomllib

LOWER = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(>=|==)\s*([^,;\s]+)")

with open(sys.argv[1], "rb") as file:
    project = tomllib.load(file)["project"]
for requirement in project["dependencies"]:
    match = LOWER.match(requirement)
    if match is None:
        raise SystemExit(f"no lower bound in {requirement!r}: every dependency needs one")
    name, _, version = match.groups()
    print(f"{name}=={version}")
