from goodput_agent.analysis.kernel_families import diff, families, family_of
from goodput_agent.parsing.trace_model import COMPUTE, GpuOp


def test_families_drop_templates_arguments_and_tiles():
    assert family_of("ampere_sgemm_128x64_tn") == "ampere_sgemm"
    assert family_of("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "ncclDevKernel_AllReduce"
    assert family_of("void at::native::vectorized_elementwise_kernel<4, at::native::Gelu<float>>"
                     "(int, float*)") == "vectorized_elementwise_kernel"
    assert family_of("Memcpy HtoD (Pinned -> Device)") == "Memcpy HtoD"


def test_diff_is_per_call_and_sorted_by_added_time():
    def ops(name, n, dur):
        return [GpuOp(ts=i, dur=dur, kind=COMPUTE, name=name, stream=7, device=0)
                for i in range(n)]
    base = families(ops("ampere_sgemm_64x64_nt", 10, 100) + ops("reduce_kernel", 10, 10))
    inc = families(ops("ampere_sgemm_64x64_nt", 20, 150) + ops("reduce_kernel", 10, 30))
    changes = diff(base, inc)
    assert [c.family for c in changes] == ["ampere_sgemm", "reduce_kernel"]
    assert changes[0].ratio == 1.5  # twice the calls do not make a kernel slower
