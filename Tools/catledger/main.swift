// catledger: the command-line tool. Thin: parses arguments and calls the libraries.
print("catledger: not yet implemented")
