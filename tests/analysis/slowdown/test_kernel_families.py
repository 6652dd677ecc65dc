import pytest

from goodput_agent.analysis.slowdown.kernel_families import (
    diff,
    families,
    family_of,
    per_call_ratio,
    pooled,
)
from goodput_agent.parsing.kineto.model import COMM, COMPUTE, GpuOp


@pytest.mark.parametrize(("name", "family"), [
    ("ampere_sgemm_128x64_tn", "ampere_sgemm"),
    ("volta_sgemm_128x32_nt", "volta_sgemm"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllReduce"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
     "ncclKernel_SendRecv"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::Gelu<float>>(int, float*)",
     "vectorized_elementwise_kernel"),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128,"
     " 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata)",
     "CatArrayBatchedCopy"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nt_align4>(Params)",
     "cutlass_80_tensorop_s1688gemm"),
    ("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float>(int)",
     "gemvx::kernel"),
    ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_stage5"
     "_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer",
     "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc"),
    ("cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", "cudnn_infer_volta_scudnn"),
    ("void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1"
     "<float, float>(int)", "split_embedding_backward_codegen_rowwise_adagrad_unweighted_"
     "kernel_cta_per_row"),
    ("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul"),
    ("_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11thread",
     "cutlass_cudnn_train::ImplicitGemmConvolution"),
    ("Memcpy HtoD (Pinned -> Device)", "Memcpy HtoD"),
    ("Memset (Device)", "Memset"),
])
def test_families_drop_templates_arguments_and_tiles(name, family):
    assert family_of(name) == family


def ops(name, n, dur, kind=COMPUTE):
    return [GpuOp(ts=i, dur=dur, kind=kind, name=name, stream=7, device=0) for i in range(n)]


def test_families_count_calls_and_time_per_family_and_kind():
    fams = families(ops("ampere_sgemm_64x64_nt", 3, 100) + ops("ampere_sgemm_128x64_tn", 2, 50)
                    + ops("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 4, 10, COMM))
    assert [(f.family, f.kind, f.calls, f.total_us, f.mean_us) for f in fams] == [
        ("ampere_sgemm", COMPUTE, 5, 400, 80), ("ncclDevKernel_AllReduce", COMM, 4, 40, 10)]
    assert len(families(ops("a", 1, 1) + ops("b", 1, 2), top=1)) == 1


def test_diff_is_per_call_and_sorted_by_added_time():
    base = families(ops("ampere_sgemm_64x64_nt", 10, 100) + ops("reduce_kernel", 10, 10))
    inc = families(ops("ampere_sgemm_64x64_nt", 20, 150) + ops("reduce_kernel", 10, 30)
                   + ops("new_kernel", 10, 500))
    changes = diff(base, inc)
    assert [c.family for c in changes] == ["ampere_sgemm", "reduce_kernel"]  # new: no baseline
    assert changes[0].ratio == 1.5  # twice the calls do not make a kernel slower
    assert diff(base, inc, min_calls=11) == []


def test_pooled_ranks_and_the_per_call_ratio():
    rank_a = families(ops("ampere_sgemm_64x64_nt", 10, 100))
    rank_b = families(ops("ampere_sgemm_64x64_nt", 10, 200))
    (run,) = pooled([rank_a, rank_b])
    assert (run.calls, run.mean_us) == (20, 150)
    assert per_call_ratio(rank_a, rank_b) == pytest.approx(2.0)
    assert per_call_ratio(rank_a, families(ops("other", 10, 5))) is None
