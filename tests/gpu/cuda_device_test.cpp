// The `gpu` suite (ctest -L gpu; built only with CUDA): the same kernel-against-CPU comparisons
// as the simulated-grid tests (tests/kernels/cuda_kernel_checks*.hpp), every kernel × its shapes,
// on make_device_ops(0): bit for bit, except paged_attention, held to the tolerance its device
// expf calls for (cuda_kernel_checks_kv_attention.hpp). Without a device every case prints one skip
// line and passes, so the suite can run in every CI job.
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda_kernel_checks.hpp"
#include "kernels/cuda_kernel_checks_fused.hpp"
#include "kernels/cuda_kernel_checks_kv_attention.hpp"
#include "kernels/cuda_kernel_checks_norm_rope_elementwise.hpp"

#include <doctest/doctest.h>

#include <memory>

using namespace bitnet;
namespace kc = bitnet::kernels::cuda;

namespace {

/// Device 0, or null after a skip line saying why there is none.
std::unique_ptr<kc::ops> device_or_skip() {
    const kc::device_report r = kc::enumerate_devices();
    if (r.devices.empty()) {
        MESSAGE("skip: no CUDA device (" << r.error << ")");
        return nullptr;
    }
    auto o = kc::make_device_ops(0);
    MESSAGE("on " << o->describe());
    return o;
}

} // namespace

TEST_CASE("gpu quantize equals quantize_activations bit for bit") {
    const auto o = device_or_skip();
    if (!o)
        return;
    test::cuda::check_quantize_table(*o);
}

TEST_CASE("gpu ternary_gemm equals the scalar ternary_matmul bit for bit") {
    const auto o = device_or_skip();
    if (!o)
        return;
    test::cuda::check_ternary_gemm_table(*o);
}

TEST_CASE("gpu f16_gemm equals f16_matmul bit for bit") {
    const auto o = device_or_skip();
    if (!o)
        return;
    test::cuda::check_f16_gemm_table(*o);
}

TEST_CASE("gpu rms_norm equals kernels::rms_norm bit for bit") {
    const auto o = device_or_skip();
    if (!o)
        return;
    test::cuda::check_rms_norm_table(*o);
    test::cuda::check_rms_norm_cpu_order(*o);
    test::cuda::check_rms_norm_in_place_and_empty(*o);
}

TEST_CASE("gpu rope equals kernels::rope_apply bit for bit") {
    const auto o = device_or_skip();
    if (!o)
        return;
    test::cuda::check_rope_table(*o);
}

TEST_CASE("gpu kv_append equals f32_to_f16 at every row's offsets") {
    const auto o = device_or_skip();
    if (!o)
        return;
    test::cuda::check_kv_append_table(*o);
}

TEST_CASE("gpu paged_attention is within device_tolerance of attention_one_token") {
    const auto o = device_or_skip();
    if (!o)
        return;
    const double worst = test::cuda::check_paged_attention_table(*o, false);
    MESSAGE("paged_attention on the device: max |error| / max |V| = " << worst);
    test::cuda::check_paged_attention_cpu_order(*o, false);
}

TEST_CASE("gpu relu_sqr_gate and add equal the CPU's bit for bit") {
    const auto o = device_or_skip();
    if (!o)
        return;
    test::cuda::check_relu_sqr_gate_table(*o);
    test::cuda::check_add_table(*o);
}

TEST_CASE("gpu device memory, pinned memory and stream copies round-trip") {
    const auto o = device_or_skip();
    if (!o)
        return;
    const std::size_t n = 1 << 20;
    auto* pinned = static_cast<std::uint8_t*>(o->alloc_pinned(n));
    for (std::size_t i = 0; i < n; ++i)
        pinned[i] = static_cast<std::uint8_t>(i * 7);
    void* a = o->alloc(n);
    void* b = o->alloc(n);
    o->upload(a, pinned, n);
    o->copy(b, a, n);
    std::vector<std::uint8_t> back(n);
    o->download(back.data(), b, n);
    o->finish();
    bool same = true;
    for (std::size_t i = 0; i < n; ++i)
        same = same && back[i] == static_cast<std::uint8_t>(i * 7);
    CHECK(same);
    o->release(a);
    o->release(b);
    o->release_pinned(pinned);
    CHECK(o->free_bytes() > 0);
}

TEST_CASE("gpu an impossible allocation throws out_of_memory") {
    const auto o = device_or_skip();
    if (!o)
        return;
    try {
        (void)o->alloc(std::size_t{1} << 50);
        FAIL("a 1 PiB allocation succeeded");
    } catch (const kc::device_error& e) {
        CHECK(e.kind() == kc::device_failure::out_of_memory);
    }
}

TEST_CASE("gpu split-K ternary GEMM with segments and accumulate equals the CPU bit for bit") {
    const auto o = device_or_skip();
    if (!o)
        return;
    test::cuda::check_stacked_gemm_table(*o);
}

TEST_CASE("gpu norm_quantize, rope_kv and embed equal their unfused twins bit for bit") {
    const auto o = device_or_skip();
    if (!o)
        return;
    test::cuda::check_norm_quantize_table(*o);
    test::cuda::check_rope_kv_table(*o);
    test::cuda::check_embed(*o);
}
