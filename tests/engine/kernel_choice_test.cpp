// The kernel family of each op is chosen by timing the families on the model's shapes at load:
// the choice rule on scripted timings, the step-size thresholds, and a real engine's report.
#include "model/engine/kernel_choice.hpp"

#include "engine_fixture.hpp"
#include "kernels/cpu_features.hpp"

#include <map>

using namespace bitnet;
using namespace bitnet::test;
using kernels::isa;

TEST_CASE("kernel choice: the fastest family wins, timed in alternation after a warm-up") {
    const std::array<isa, 2> families{isa::avx2, isa::avx512_vnni};
    SUBCASE("each op picks the family with the lowest best time") {
        for (const bool avx2_faster : {true, false}) {
            CAPTURE(avx2_faster);
            std::vector<isa> calls;
            // The slower family's best time is still below the faster one's first (warm-up)
            // time: only the best of the timed repeats counts, not the warm-up.
            const auto run = [&](isa f) {
                calls.push_back(f);
                const bool fast = (f == isa::avx2) == avx2_faster;
                const double warm = calls.size() <= 2 ? 10.0 : 0.0;
                return warm + (fast ? 1.0 : 2.0) + 0.01 * static_cast<double>(calls.size());
            };
            const auto won =
                model::pick_fastest(model::kernel_op::ternary_prefill, families, 128, run, 3);
            CHECK(won.family == (avx2_faster ? isa::avx2 : isa::avx512_vnni));
            const auto& c = won.report;
            CHECK(c.op == "ternary_prefill");
            CHECK(c.source == "measured");
            CHECK(c.family == (avx2_faster ? "avx2" : "avx512_vnni"));
            CHECK(c.tokens == 128);
            REQUIRE(c.timings.size() == 2);
            CHECK(c.timings[0].family == "avx2");
            CHECK(c.timings[1].family == "avx512_vnni");
            // 1 warm-up each, then A B A B A B.
            const std::vector<isa> order{isa::avx2, isa::avx512_vnni, isa::avx2, isa::avx512_vnni,
                                         isa::avx2, isa::avx512_vnni, isa::avx2, isa::avx512_vnni};
            CHECK(calls == order);
            // Best times are the first timed repeat of each (times grow with the call count).
            CHECK(c.timings[0].micros == doctest::Approx((avx2_faster ? 1.03 : 2.03) * 1e6));
            CHECK(c.timings[1].micros == doctest::Approx((avx2_faster ? 2.04 : 1.04) * 1e6));
        }
    }
    SUBCASE("a tie goes to the earlier candidate") {
        const auto c = model::pick_fastest(model::kernel_op::logits_gemv, families, 1, [](isa) {
                           return 1.0;
                       }).report;
        CHECK(c.family == "avx2");
    }
    SUBCASE("one candidate is not timed") {
        int calls = 0;
        const std::array<isa, 1> one{isa::avx2};
        const auto c = model::pick_fastest(model::kernel_op::ternary_gemv, one, 1, [&](isa) {
                           ++calls;
                           return 1.0;
                       }).report;
        CHECK(calls == 0);
        CHECK(c.family == "avx2");
        CHECK(c.source == "only family");
        CHECK(c.timings.empty());
    }
}

namespace {
model::kernel_choice measured(const char* op, const char* family) {
    model::kernel_choice c;
    c.op = op;
    c.family = family;
    c.source = "measured";
    return c;
}
} // namespace

TEST_CASE("kernel choice: a step's size selects the op whose family runs it") {
    auto plan = model::kernel_plan::uniform(isa::scalar, "only family");
    CHECK(plan.report().size() == model::n_kernel_ops);
    plan.set(model::kernel_op::ternary_gemv, isa::avx2, measured("ternary_gemv", "avx2"));
    plan.set(model::kernel_op::ternary_batched, isa::avx512_vnni,
             measured("ternary_batched", "avx512_vnni"));
    plan.set(model::kernel_op::logits_batched, isa::avx2, measured("logits_batched", "avx2"));
    CHECK(plan.report().size() == model::n_kernel_ops); // replaced, not added
    CHECK(plan.ternary_for(1) == isa::avx2);
    CHECK(plan.ternary_for(2) == isa::avx512_vnni);
    CHECK(plan.ternary_for(model::prefill_from_tokens - 1) == isa::avx512_vnni);
    CHECK(plan.ternary_for(model::prefill_from_tokens) == isa::scalar);
    CHECK(plan.logits_for(1) == isa::scalar);
    CHECK(plan.logits_for(2) == isa::avx2);
    CHECK(plan.summary().find("ternary_batched avx512_vnni (measured)") != std::string::npos);
}

TEST_CASE("kernel choice: a loaded engine reports a measured family per op that this CPU runs") {
    auto e = load_engine(data_path("bitnetcpp/tiny-i2_s.gguf"));
    const auto choices = e->kernel_choices();
    REQUIRE(choices.size() == model::n_kernel_ops);
    std::map<std::string, isa> by_name;
    for (isa f : {isa::scalar, isa::avx2, isa::avx512_vnni})
        by_name[std::string(kernels::isa_name(f))] = f;
    for (const auto& c : choices) {
        CAPTURE(c.op);
        REQUIRE(by_name.count(c.family) == 1);
        CHECK(kernels::isa_supported(by_name[c.family]));
        if (kernels::isa_pinned()) {
            CHECK(c.source == "pinned by BITNET_ISA");
            continue;
        }
        const bool two_simd = kernels::isa_supported(isa::avx512_vnni);
        CHECK(c.source == (two_simd ? "measured" : "only family"));
        if (c.source != "measured")
            continue;
        // The family named is the one with the lowest time, every time positive.
        REQUIRE(c.timings.size() == 2);
        CHECK(c.tokens >= 1);
        const auto best =
            std::min_element(c.timings.begin(), c.timings.end(),
                             [](const auto& a, const auto& b) { return a.micros < b.micros; });
        CHECK(best->family == c.family);
        for (const auto& t : c.timings)
            CHECK(t.micros > 0.0);
    }
    CHECK(e->describe().find("kernels: ternary_gemv") != std::string::npos);
}

TEST_CASE("kernel choice: the Q8_0 logits are timed in every family too, and run the chosen one") {
    if (kernels::isa_pinned() || !kernels::isa_supported(isa::avx512_vnni))
        return; // one family: nothing to choose between
    model::engine_options opt;
    opt.model_path = data_path("bitnetcpp/tiny-i2_s.gguf");
    opt.q8_logits = true;
    auto e = model::engine::load(opt).value();
    CHECK(e->describe().find("Q8_0") != std::string::npos);
    for (const auto& c : e->kernel_choices()) {
        if (c.op.rfind("logits", 0) != 0)
            continue;
        CAPTURE(c.op);
        CHECK(c.source == "measured");
        CHECK(c.timings.size() == 2);
    }
}
