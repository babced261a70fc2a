// Tests for SquareIntegration.
