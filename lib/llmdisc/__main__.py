"""``python -m llmdisc``: the command-line interface."""

from llmdisc.cli.main import main

raise SystemExit(main())
