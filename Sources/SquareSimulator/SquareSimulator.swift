// SquareSimulator: a faithful fake of Square's Catalog API for tests, benchmarks and the demo.
