"""`python -m explorer` is the same program as the `skill-explorer` script."""

from explorer.cli import main

raise SystemExit(main())
