"""llmdisc: ask LLMs whether a 20-row sample of a table is REAL or SYNTHETIC, and score the answers.

The package is organised one module per stage of the compendium (data → synth → sampling →
prompts/metadata → providers/cache/trials → metrics → baselines → human → plots → pipeline),
each stage reading named input files and writing named outputs with a ``manifest.json`` beside them.
"""

__version__ = "0.1.0"

LABELS = ("REAL", "SYNTHETIC")
CONDITIONS = ("C1", "C2")
SYNTHESIZERS = ("gaussian_copula", "ctgan", "tvae")
