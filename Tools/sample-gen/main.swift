// sample-gen: records a seeded, realistic catalog history by driving the simulator.
print("sample-gen: not yet implemented")
