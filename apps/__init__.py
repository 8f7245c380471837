"""The rankmodels command-line application (Click). Thin: parse, call the library, write, report."""
