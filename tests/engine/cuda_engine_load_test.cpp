// Loading the CUDA engine: what it refuses (errc::unsupported, with the reason an operator and
// the supervisor's CPU fallback read: TL1/TL2 projections, a SiLU feed-forward, Q8_0 logits, not
// enough device memory), a CUDA placement on a machine without a usable GPU, and what describe()
// says on the simulated grid.
#include "cuda_engine_twin.hpp"
#include "kernels/cuda/ops.hpp"
#include "model/engine/cuda/cuda_engine.hpp"

using namespace bitnet;
using namespace bitnet::test;

namespace {

namespace cuda = kernels::cuda;

/// The simulated grid with a device memory of `capacity` bytes: reports what is left as free,
/// and fails allocations past it as a device would (device_error out_of_memory).
class small_device final : public cuda::ops {
public:
    small_device(std::uint64_t capacity, std::uint64_t reported_free)
        : inner_(cuda::make_simulated_ops())
        , capacity_(capacity)
        , reported_free_(reported_free) {}
    std::string describe() const override { return "small simulated device"; }
    bool simulated() const noexcept override { return true; }
    std::uint64_t free_bytes() const override { return reported_free_; }
    /// From now on, launches after the next `n` fail as a lost device's would.
    void fail_launches_after(long n) { launches_left_ = n; }
    void* alloc(std::size_t bytes) override {
        if (used_ + bytes > capacity_)
            throw cuda::device_error(cuda::device_failure::out_of_memory,
                                     "cannot allocate " + std::to_string(bytes) + " bytes");
        used_ += bytes;
        return inner_->alloc(bytes);
    }
    void release(void* p) noexcept override { inner_->release(p); }
    void* alloc_pinned(std::size_t bytes) override { return inner_->alloc_pinned(bytes); }
    void release_pinned(void* p) noexcept override { inner_->release_pinned(p); }
    void upload(void* d, const void* h, std::size_t n) override { inner_->upload(d, h, n); }
    void download(void* h, const void* d, std::size_t n) override { inner_->download(h, d, n); }
    void copy(void* d, const void* s, std::size_t n) override { inner_->copy(d, s, n); }
    void finish() override { inner_->finish(); }
#define BITNET_FORWARD_RUN(name)                                                                   \
    void run(const cuda::name##_args& a) override {                                                \
        if (launches_left_ == 0)                                                                   \
            throw cuda::device_error(cuda::device_failure::launch_failed,                          \
                                     "the " #name " launch failed");                               \
        if (launches_left_ > 0)                                                                    \
            --launches_left_;                                                                      \
        inner_->run(a);                                                                            \
    }
    BITNET_CUDA_KERNELS(BITNET_FORWARD_RUN)
#undef BITNET_FORWARD_RUN

private:
    std::unique_ptr<cuda::ops> inner_;
    std::uint64_t capacity_;
    std::uint64_t reported_free_;
    std::uint64_t used_ = 0;
    long launches_left_ = -1; ///< -1: launches never fail
};

model::engine_options options_for(const std::string& path) {
    model::engine_options opt;
    opt.model_path = path;
    opt.kv_budget_bytes = 16ull << 20;
    return opt;
}

void check_unsupported(const result<std::unique_ptr<model::engine>>& r, const std::string& what) {
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::unsupported);
    CAPTURE(r.error().message);
    CHECK(r.error().message.find(what) != std::string::npos);
}

} // namespace

TEST_CASE("cuda engine: formats it has no kernels for are refused as unsupported, naming why") {
    scratch_dir dir;
    const model::placement sim{"sim", 0};
    SUBCASE("TL1 and TL2 projections") {
        for (const char* fmt : {"tl1", "tl2"}) {
            CAPTURE(fmt);
            auto opt = options_for(data_path(std::string("bitnetcpp/tl/tiny-") + fmt + ".gguf"));
            opt.tl_kernel_config =
                data_path(std::string("bitnetcpp/tl/kernel_config_") + fmt + ".ini");
            REQUIRE(model::load_engine_on(opt, model::placement{"cpu", 0})); // the CPU runs it
            const auto r = model::load_engine_on(opt, sim);
            check_unsupported(r, "format unsupported on CUDA");
            check_unsupported(r, std::string("blk.0.attn_q.weight is ") +
                                     (fmt[2] == '1' ? "TL1" : "TL2"));
            // These fixtures are of the `bitnet` arch: the refusal gives every reason at once.
            check_unsupported(r, "SiLU");
        }
    }
    SUBCASE("a SiLU feed-forward (the bitnet and llama archs)") {
        for (const char* arch : {"bitnet", "llama"}) {
            CAPTURE(arch);
            const auto r = model::load_engine_on(options_for(make_model(dir, arch)), sim);
            check_unsupported(r, "format unsupported on CUDA");
            check_unsupported(r, "SiLU");
        }
    }
    SUBCASE("Q8_0 logits") {
        auto opt = options_for(make_model(dir, "bitnet-b1.58"));
        opt.q8_logits = true;
        const auto r = model::load_engine_on(opt, sim);
        check_unsupported(r, "format unsupported on CUDA");
        check_unsupported(r, "Q8_0 logits");
    }
    SUBCASE("a bad file is bad on every device, with engine::load's error") {
        const auto r = model::load_engine_on(options_for(dir.file("missing.gguf")), sim);
        REQUIRE_FALSE(r);
        CHECK(r.error().value() == errc::io_error);
    }
}

TEST_CASE("cuda engine: not enough device memory is refused as unsupported with the sizes") {
    scratch_dir dir;
    const auto opt = options_for(make_model(dir, "bitnet-b1.58"));
    // What the whole engine takes, measured on an ample simulated device.
    auto ample = model::load_cuda_engine(opt, cuda::make_simulated_ops());
    REQUIRE(ample);
    const auto& e = dynamic_cast<const model::cuda_engine&>(**ample);
    const std::uint64_t need = e.device_bytes();
    CHECK(need > e.kv_pool_bytes());

    SUBCASE("the device reports too little free memory: refused before allocating") {
        const auto r = model::load_cuda_engine(opt, std::make_unique<small_device>(need, need - 1));
        check_unsupported(r, "out of memory on small simulated device: needs " +
                                 std::to_string(need) + " bytes, " + std::to_string(need - 1) +
                                 " free");
    }
    SUBCASE("an allocation fails part-way although the report said enough") {
        const auto r = model::load_cuda_engine(opt, std::make_unique<small_device>(need / 2, need));
        check_unsupported(r, "out of memory on small simulated device");
    }
    SUBCASE("exactly enough loads") {
        CHECK(model::load_cuda_engine(opt, std::make_unique<small_device>(need * 2, need)));
    }
}

TEST_CASE("cuda engine: a CUDA placement on a machine without a usable GPU fails with the reason") {
    scratch_dir dir;
    // Never reaches the file: the device is opened first.
    const auto r =
        model::load_engine_on(options_for(dir.file("any.gguf")), model::placement{"cuda", 0});
    if (r) {
        MESSAGE("this machine has a CUDA device: " << (*r)->describe());
        return;
    }
    CHECK(r.error().value() == errc::unsupported);
    const std::string& m = r.error().message;
    CAPTURE(m);
    CHECK(m.rfind("cuda:0: ", 0) == 0);
    CHECK(m.find("cuda:0", 1) == std::string::npos); // the device named once
    CHECK((m.find("not_built") != std::string::npos || m.find("no_driver") != std::string::npos ||
           m.find("no_device") != std::string::npos));
}

TEST_CASE("cuda engine: describe() on the simulated grid says where it runs and what was checked") {
    scratch_dir dir;
    auto e = load_sim_engine(make_model(dir, "bitnet-b1.58"));
    const std::string d = e->describe();
    CAPTURE(d);
    CHECK(d.find("simulated grid") != std::string::npos);
    CHECK(d.find("GPU ternary layout") != std::string::npos);
    CHECK(d.find("I2_S") != std::string::npos);
    const auto& ce = dynamic_cast<const model::cuda_engine&>(*e);
    // The embedding is the tied F16 logits matrix: gathered on the device, nothing on the host.
    CHECK(d.find("gathered on the device") != std::string::npos);
    CHECK(ce.host_bytes() == 0);
    CHECK(e->kv_blocks_free() == e->kv_blocks_total());
    // Asked to look embeddings up on the host, it keeps n_vocab rows of n_embd F16 there.
    model::cuda_buffer_caps caps;
    caps.gather_embeddings = false;
    auto h = load_sim_engine(make_model(dir, "bitnet-b1.58"), 64ull << 20, &caps);
    CHECK(dynamic_cast<const model::cuda_engine&>(*h).host_bytes() ==
          std::uint64_t{e->config().n_vocab} * e->config().n_embd * 2);
}

TEST_CASE("cuda engine: a failed launch rolls the step back and goes on as the device's failure") {
    scratch_dir dir;
    const auto opt = options_for(make_model(dir, "bitnet-b1.58"));
    auto device = std::make_unique<small_device>(1ull << 40, 1ull << 40);
    small_device* dev = device.get();
    auto loaded = model::load_cuda_engine(opt, std::move(device));
    REQUIRE(loaded);
    model::engine& eng = **loaded;
    // One whole block, so the next step takes a new block that its rollback must give back.
    const std::vector<std::int32_t> prompt{1, 300, 42, 7, 15, 8, 260, 99,
                                           3, 401, 77, 5, 6,  9, 11,  12};
    REQUIRE(eng.step({{model::seq_chunk{1, prompt, 0, true}}}));
    REQUIRE(eng.kv_block_tokens() == prompt.size());
    const std::uint32_t free_before = eng.kv_blocks_free();
    const model::seq_chunk next{
        1, {20, 21, 22, 23}, static_cast<std::uint32_t>(prompt.size()), true};
    dev->fail_launches_after(5);
    try {
        (void)eng.step({{next}});
        FAIL("a failed launch must reach the caller as device_error");
    } catch (const cuda::device_error& e) {
        CHECK(e.kind() == cuda::device_failure::launch_failed);
    }
    CHECK(eng.kv_blocks_free() == free_before);
    // The sequence is as it was: once the device works again, the same step runs.
    dev->fail_launches_after(-1);
    CHECK(eng.step({{next}}));
}
