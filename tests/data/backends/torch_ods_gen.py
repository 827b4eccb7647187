# Excerpt in the shape of torch-mlir's torch_ods_gen.py (emit calls inside emit_ops).
def emit_ops(emitter_td: TextEmitter, registry: Registry):
    def emit(key, **kwargs):
        emit_op(registry[key], emitter_td, **kwargs)

    def emit_with_mutating_variants(key, **kwargs):
        operator = registry[key]
        emit_op(operator, emitter_td, **kwargs)
        ns, unqual, overload = operator.triple
        emit_op(registry.get_by_triple((ns, unqual + "_", overload)), emitter_td, traits=["IsTrailingUnderscoreInplaceVariant"])

    # Elementwise tensor compute ops
    for key in [
        "aten::tanh : (Tensor) -> (Tensor)",
        "aten::relu : (Tensor) -> (Tensor)",
    ]:
        emit_with_mutating_variants(key)
    emit_with_mutating_variants("aten::add.Tensor : (Tensor, Tensor, Scalar) -> (Tensor)", has_canonicalizer=True)
    emit_with_mutating_variants(
        "aten::sub.Tensor : (Tensor, Tensor, Scalar) -> (Tensor)", has_canonicalizer=True
    )
    emit("aten::view : (Tensor, int[]) -> (Tensor)", has_folder=True)
    emit("aten::std.correction : (Tensor, int[]?, Scalar?, bool) -> (Tensor)")
    emit("aten::native_layer_norm : (Tensor, int[], Tensor?, Tensor?, float) -> (Tensor, Tensor, Tensor)")
