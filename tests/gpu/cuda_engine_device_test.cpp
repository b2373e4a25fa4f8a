// The CUDA engine on a real device (cuda:0) against the CPU engine: the simulated grid's
// teacher-forced comparison (tests/engine/cuda_engine_sim_test.cpp) again, where the kernels run
// as nvcc compiled them. Without a device (no driver, no GPU) it prints one skip line and passes:
// CI machines have no GPU, and this is what a first GPU run should check (README, "The CUDA
// engine"), with the kernels' own cases of this suite.
#include "engine/cuda_engine_graph_checks.hpp"
#include "engine/cuda_engine_twin.hpp"
#include "engine/cuda_sampler_checks.hpp"
#include "kernels/cuda/ops.hpp"

using namespace bitnet;
using namespace bitnet::test;

TEST_CASE("cuda engine on cuda:0: teacher-forced top-1 and logits within the device bound of the "
          "CPU engine's") {
    const kernels::cuda::device_report report = kernels::cuda::enumerate_devices();
    if (report.devices.empty()) {
        MESSAGE("skipped: no CUDA device (" << report.error << ")");
        return;
    }
    scratch_dir dir;
    const std::vector<std::int32_t> prompt{1, 300, 42, 7, 15, 8, 260, 99, 3, 401, 77};
    for (const std::string& path :
         {make_model(dir, "bitnet-b1.58"), data_path("bitnetcpp/tiny-i2_s.gguf")}) {
        CAPTURE(path);
        model::engine_options opt;
        opt.model_path = path;
        opt.kv_budget_bytes = 64ull << 20;
        auto gpu = model::load_engine_on(opt, model::placement{"cuda", 0});
        REQUIRE_MESSAGE(gpu, (gpu ? std::string() : gpu.error().to_string()));
        MESSAGE((*gpu)->describe());
        const twin_record rec =
            teacher_forced(*load_engine(path), **gpu, prompt, 24, device_logit_tolerance);
        MESSAGE("rows " << rec.rows << ", max |logit diff| " << rec.max_diff << ", near ties "
                        << rec.near_ties << ", smallest top-1 margin " << rec.min_margin);
        CHECK(rec.rows == 25);
        CHECK(rec.max_diff <= device_logit_tolerance);
    }
}

namespace {

bool have_device() {
    const kernels::cuda::device_report report = kernels::cuda::enumerate_devices();
    if (report.devices.empty())
        MESSAGE("skipped: no CUDA device (" << report.error << ")");
    return !report.devices.empty();
}

std::unique_ptr<model::engine> load_on_device(const std::string& path,
                                              const model::cuda_buffer_caps& caps) {
    model::engine_options opt;
    opt.model_path = path;
    opt.kv_budget_bytes = 64ull << 20;
    auto e = model::load_cuda_engine(opt, kernels::cuda::make_device_ops(0), caps);
    REQUIRE_MESSAGE(e, (e ? std::string() : e.error().to_string()));
    return std::move(*e);
}

} // namespace

TEST_CASE("cuda engine on cuda:0: a decode step replayed as a CUDA graph equals the step "
          "launched for its size, bit for bit") {
    if (!have_device())
        return;
    scratch_dir dir;
    model::cuda_buffer_caps caps;
    ragged_decodes(make_model(dir, "bitnet-b1.58", 2), caps, {3, 5, 7, 1, 2, 6, 8, 3},
                   load_on_device);
    ragged_decodes(data_path("bitnetcpp/tiny-i2_s.gguf"), caps, {2, 5, 3}, load_on_device);
}

TEST_CASE("gpu device sampler: model::sampler's tokens, logprobs within 1e-5") {
    if (!have_device())
        return;
    const auto o = kernels::cuda::make_device_ops(0);
    cuda::check_sampler_table(*o, false);
    cuda::check_sampler_penalties_and_bias(*o, false);
    cuda::check_sampler_refusals(*o);
}
