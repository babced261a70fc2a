// ledger-bench: benchmarks measured as ratios against a baseline in the same run.
print("ledger-bench: not yet implemented")
