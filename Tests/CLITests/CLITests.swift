// Tests for CLI.
