"""Sub-commands of the ``llmdisc`` CLI, one module each (see :mod:`llmdisc.cli.main`)."""
