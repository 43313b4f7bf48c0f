# A random op the backward recomputes (here for its MUST_RECOMPUTE tag) draws the same numbers in
# both graphs (§13.25): the forward runs it through run_and_save_rng_state and saves the generator
# state, the backward takes that state and runs it through run_with_rng_state.
# RUN: --passes=joint,partition

def forward(self, x: "f32[64]"):
    native_dropout = torch.ops.aten.native_dropout.default(x, 0.5, True)  # recompute=MUST_RECOMPUTE
    getitem = native_dropout[0]
    getitem_1 = native_dropout[1]
    sin = torch.ops.aten.sin.default(getitem)
    return (sin,)

# CHECK-LABEL: # forward
# CHECK: torch.ops.higher_order.run_and_save_rng_state(torch.ops.aten.native_dropout.default, primals_1, 0.5, True)
# CHECK-LABEL: # backward
# CHECK: rng_state_output_0
# CHECK: torch.ops.higher_order.run_with_rng_state(rng_state_output_0, torch.ops.aten.native_dropout.default, primals_1, 0.5, True)
