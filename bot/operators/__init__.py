"""The operators stage: native_functions.yaml (and registration headers) → the registered operators.

`entries` reads the yaml into `RawEntry` items; `native` turns them into the `OperatorSet` torchgen
would see: `validate` checks each entry, `dispatch` resolves its kernels and composite status,
`autogen` adds the generated out= and functional members. `registration` reads the wheels'
RegistrationDeclarations.h instead.
"""
