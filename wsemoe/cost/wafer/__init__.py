"""The wafer at PE level: per-PE SRAM, the fabric between PEs, operators on PE regions, placement and serving.

Modules (numpy only; every function takes scalars or arrays that broadcast and the PE facts as attributes,
`HardwareSpec.pe` or a namespace of arrays):

- `fabric`: path latency `hops·hop + turns·turn + relays·relay`, XY routes, wavelets of a message, the
  program rectangle, SIMD MAC cycles, seconds;
- `collectives`: reduce / broadcast / all-reduce along a line of p PEs (chain, K-level tree, ring) as a
  `Cost` (streamed volume and critical path), `best_allreduce` per shape;
- `operators`: `gemv` (weights split in 2D, tokens pipelined), `cyclic_gemm` (MeshGEMM, Cannon), `gemm`;
- `decode`: one dense layer's decode step on a rows × cols region (`dense_layer`, `attention`, `ffn`,
  `norm`), SRAM per PE, tokens per second.

Formulas and sources: docs/cost-model.md ("The wafer at PE level"), docs/sources.md.
"""
