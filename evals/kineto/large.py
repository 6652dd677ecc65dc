"""Large traces: a model-shaped step, a spec repeated to a byte count, a whole job of them."""

from __future__ import annotations

import math
from pathlib import Path

from goodput_agent.evals.kineto.layout import synchronize
from goodput_agent.evals.kineto.render import render, write_trace
from goodput_agent.evals.kineto.spec import Bucket, Kernel, RankTrace, StepPlan


def model_step(number: int = 1, *, layers: int = 12, scale: float = 1.0) -> StepPlan:
    """A transformer-like DDP step: per layer 4 forward and 6 backward kernels, one gradient
    bucket per layer (its all-reduce mostly hidden under the next layer's backward), a fused
    AdamW."""
    fwd_k = [("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
              "_execute_segment_k_off_kernel__5x_cublas", "aten::mm", 160.0),
             ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl"
              "(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#2}"
              "::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
              "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&)::{lambda()#1}::operator"
              "()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
              "at::detail::Array<char*, 2>)", "aten::gelu", 38.0),
             ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, "
              "float>(int, float, float const*, float const*, float const*, float*, float*, "
              "float*)", "aten::native_layer_norm", 22.0),
             ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1"
              "_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x1_tn_align8"
              "::Params)", "aten::addmm", 120.0)]
    bwd_k = [(fwd_k[0][0], "aten::mm", 170.0), (fwd_k[0][0], "aten::mm", 165.0),
             ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackward"
              "CUDAKernelImpl(at::TensorIteratorBase&)::{lambda()#1}::operator()() const>"
              "(int, float*)", "aten::gelu", 45.0),
             ("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, "
              "float>(float const*, float const*, float const*, float const*, float const*, "
              "float*, int)", "aten::native_layer_norm", 30.0),
             (fwd_k[3][0], "aten::addmm", 130.0),
             ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
              "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()"
              "(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >"
              "(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::"
              "sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda("
              "float, float)#1}>, unsigned int, float, 4>)", "aten::sum", 25.0)]
    fwd = [Kernel(name=n, op=o, dur_us=d * scale) for _ in range(layers) for n, o, d in fwd_k]
    bwd = [Kernel(name=n, op=o, dur_us=d * scale) for _ in range(layers) for n, o, d in bwd_k]
    per = len(bwd_k)
    buckets = [Bucket(after=i + per - 1, transfer_us=420.0) for i in range(0, len(bwd), per)]
    opt = [Kernel(name="void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::"
                  "native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous"
                  " namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, "
                  "false>, float*, double, double, double, double, double, bool, float*, "
                  "float*>(int64_t, at::native::(anonymous namespace)::TensorListMetadata<4>, "
                  "...)", op="aten::_fused_adamw_", dur_us=95.0 * scale, grid=(320, 1, 1),
                  block=(512, 1, 1))] * 4
    return StepPlan(number=number, forward=fwd, backward=bwd, optimizer=opt, buckets=buckets)


def sized(rt: RankTrace, target_bytes: int) -> RankTrace:
    """`rt` with its first step repeated (renumbered) until the trace is about
    `target_bytes` long; the per-step size is measured by rendering one step."""
    one = rt.model_copy(update={"steps": rt.steps[:1]})
    first = sum(len(p.encode()) for p in render(one))
    two = rt.model_copy(update={"steps": [rt.steps[0], rt.steps[0].model_copy(
        update={"number": rt.steps[0].number + 1})]})
    per_step = max(sum(len(p.encode()) for p in render(two)) - first, 1)
    n = max(1, math.ceil((target_bytes - (first - per_step)) / per_step))
    base = rt.steps[0]
    steps = [base.model_copy(update={"number": base.number + i,
                                     "buckets": [b.model_copy() for b in base.buckets]})
             for i in range(n)]
    return rt.model_copy(update={"steps": steps})


def write_large_job(root: Path, *, ranks: int = 2, size_bytes: int = 100_000_000,
                    gz: bool = False) -> list[Path]:
    """One job of `ranks` traces of about `size_bytes` each (uncompressed), ranks synchronized
    at their all-reduces; rank r's compute is (1 + r/50) slower so the ranks are told apart."""
    specs = []
    for r in range(ranks):
        step = model_step(scale=1.0 + r / 50)
        rt = RankTrace(rank=r, world_size=ranks, pid=41_000 + r, device=r % 8,
                       base_ns=1_746_352_800_000_000_000, clock_us=7_200_000_000.0 + 3.0 * r,
                       trace_name=f"/tmp/profiler/rank{r}.pt.trace.json", steps=[step])
        specs.append(sized(rt, size_bytes))
    synchronize(specs)
    paths = []
    for rt in specs:
        p = root / f"rank{rt.rank}.pt.trace.json{'.gz' if gz else ''}"
        write_trace(p, rt, level=1)
        paths.append(p)
    return paths
