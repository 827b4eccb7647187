"""The schema stage: torchgen's function-schema language, parsed losslessly and compared.

`model` holds the parsed structure (types, arguments, returns, names) and prints it back byte for
byte; `grammar` parses canonical schema text into it; `compare` says how two schemas of one operator
differ for its callers (reading defaults as values through `defaults`), and `kernel` whether the C++
signature its kernels are built against changed.
"""
