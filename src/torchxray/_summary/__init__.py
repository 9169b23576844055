"""Summary layer: the rows (records), the totals (statistics) and the text and CSV (formatting)
behind `summary.summary()`, in torchinfo's order: records -> statistics -> formatting."""
