// The CUDA engine's whole forward pass on the simulated grid (every kernel body run on the host,
// kernels/cuda/grid.hpp) against the CPU engine on the same tiny models: teacher-forced, the same
// top-1 at every step; batched steps mixing sequences of different lengths, prefill chunks,
// all_logits rows and decode steps; a fork whose copy-on-write runs on the device.
#include "cuda_engine_twin.hpp"

#include <map>

using namespace bitnet;
using namespace bitnet::test;

namespace {

std::vector<std::int32_t> tokens(std::size_t n, std::int32_t first, std::int32_t stride) {
    std::vector<std::int32_t> t(n);
    for (std::size_t i = 0; i < n; ++i)
        t[i] = static_cast<std::int32_t>((first + stride * static_cast<std::int32_t>(i)) % 500);
    return t;
}

} // namespace

TEST_CASE("cuda engine (simulated grid): teacher-forced top-1 equals the CPU engine's at every "
          "step") {
    scratch_dir dir;
    const std::vector<std::int32_t> prompt{1, 300, 42, 7, 15, 8, 260, 99, 3, 401, 77};
    // The synthetic tiny model (`bitnet-model make --shape tiny`), and bitnet.cpp's own tiny file.
    for (const std::string& path :
         {make_model(dir, "bitnet-b1.58"), data_path("bitnetcpp/tiny-i2_s.gguf")}) {
        CAPTURE(path);
        const twin_record rec =
            teacher_forced(*load_engine(path), *load_sim_engine(path), prompt, 24);
        MESSAGE("rows " << rec.rows << ", max |logit diff| " << rec.max_diff
                        << ", smallest CPU top-1/top-2 margin " << rec.min_margin);
        CHECK(rec.rows == 25);
        CHECK(rec.max_diff <= logit_tolerance);
    }
}

namespace {

/// Batched steps of several sequences on both engines (KV pools of `kv_bytes`), the CUDA engine
/// with `caps` when given.
void batched_steps(const std::string& path, std::uint64_t kv_bytes,
                   const model::cuda_buffer_caps* caps) {
    auto cpu = load_engine(path, 2, kv_bytes);
    auto cuda = load_sim_engine(path, kv_bytes, caps);
    const std::uint32_t n_vocab = cpu->config().n_vocab;
    twin_record rec;

    // Step 1: four prompts of different lengths (5, 17: one block and a row, 33 with every
    // token's logits, 9 of which only a first piece of 4 without logits).
    const auto p11 = tokens(5, 11, 7);
    const auto p12 = tokens(17, 20, 13);
    const auto p13 = tokens(33, 5, 31);
    const auto p14 = tokens(9, 100, 3);
    std::vector<model::seq_chunk> batch(4);
    batch[0] = {11, p11, 0, true};
    batch[1] = {12, p12, 0, true};
    batch[2] = {13, p13, 0, true};
    batch[2].all_logits = true;
    batch[3] = {14, {p14.begin(), p14.begin() + 4}, 0, false};
    auto out = step_twins(*cpu, *cuda, batch, rec);
    CHECK(rec.rows == 5 + 33 - 3); // 1 + 1 + 33 rows

    // Steps 2..7: the three running sequences decode (the CPU's greedy tokens); sequence 14
    // sends the rest of its prompt, then decodes too; step 4 adds sequence 15, whose 12-token
    // prompt is computed as a decode from position 6 on (decoded_from).
    std::map<model::seq_id, std::int32_t> next;
    std::map<model::seq_id, std::uint32_t> len{{11, 5}, {12, 17}, {13, 33}, {14, 4}};
    auto take_next = [&](const std::vector<model::seq_chunk>& b, const model::step_output& o) {
        for (std::size_t i = 0; i < b.size(); ++i)
            if (o.rows_for_chunk[i] != model::step_output::no_row)
                next[b[i].seq] = argmax(o.row(o.rows_for_chunk[i], n_vocab));
    };
    take_next(batch, out);
    for (int step = 2; step <= 7; ++step) {
        CAPTURE(step);
        batch.clear();
        for (model::seq_id s : {11, 12, 13})
            batch.push_back({s, {next[s]}, len[s], true});
        if (step == 2)
            batch.push_back({14, {p14.begin() + 4, p14.end()}, 4, true});
        else
            batch.push_back({14, {next[14]}, len[14], true});
        if (step == 4) {
            model::seq_chunk c{15, tokens(12, 9, 5), 0, true};
            c.decoded_from = 6;
            batch.push_back(c);
        } else if (step > 4) {
            batch.push_back({15, {next[15]}, len[15], true});
        }
        out = step_twins(*cpu, *cuda, batch, rec);
        take_next(batch, out);
        for (const auto& c : batch)
            len[c.seq] += static_cast<std::uint32_t>(c.tokens.size());
    }

    // A fork of sequence 12 (length 23: a shared, partly filled second block): both continue
    // with different tokens in one step, so the child's first append copies the shared block,
    // on the device for the CUDA engine.
    REQUIRE(cpu->fork(12, 22));
    REQUIRE(cuda->fork(12, 22));
    CHECK(len[12] % cpu->kv_block_tokens() != 0);
    len[22] = len[12];
    next[22] = (next[12] + 1) % 256;
    for (int step = 0; step < 4; ++step) {
        batch.clear();
        for (model::seq_id s : {12, 22})
            batch.push_back({s, {next[s]}, len[s], true});
        out = step_twins(*cpu, *cuda, batch, rec);
        take_next(batch, out);
        for (const auto& c : batch)
            ++len[c.seq];
    }

    // A bad step changes nothing on either.
    const std::uint32_t free_before = cuda->kv_blocks_free();
    batch = {{11, {next[11]}, len[11], true}, {12, {99999}, len[12], true}};
    CHECK(cuda->step(batch).error().value() == errc::invalid_argument);
    CHECK(cuda->kv_blocks_free() == free_before);

    MESSAGE("rows " << rec.rows << ", max |logit diff| " << rec.max_diff
                    << ", smallest CPU top-1/top-2 margin " << rec.min_margin);
    CHECK(rec.max_diff <= logit_tolerance);
    for (model::seq_id s : {11, 12, 13, 14, 15, 22}) {
        cpu->release(s);
        cuda->release(s);
    }
    CHECK(cuda->kv_blocks_free() == cuda->kv_blocks_total());
}

} // namespace

TEST_CASE("cuda engine (simulated grid): batched steps of several sequences, prefill chunks, "
          "all_logits rows, decodes and a fork match the CPU engine") {
    scratch_dir dir;
    const std::string path = make_model(dir, "bitnet-b1.58", 3);
    SUBCASE("every row in one launch") {
        batched_steps(path, 64ull << 20, nullptr);
    }
    SUBCASE("logits and attention split over several launches") {
        // 16 KV blocks of 16 tokens (16 KiB each on this shape): 256 positions, and the scratch
        // at its floor of one row at full context, 256 row-positions, so the first step's 59
        // rows attend in several launches (rows × longest context ≤ 256 each); 3 logits rows
        // per launch (the 35 rows of the first step in 12 launches).
        model::cuda_buffer_caps caps;
        caps.logits_bytes = 3 * 512 * 4;
        caps.attention_scratch_bytes = 1;
        batched_steps(path, 16 * 16384, &caps);
    }
}

TEST_CASE("cuda engine (simulated grid): a prompt attached from the prefix cache continues as on "
          "the CPU engine") {
    scratch_dir dir;
    const std::string path = make_model(dir, "bitnet-b1.58", 5);
    auto cpu = load_engine(path);
    auto cuda = load_sim_engine(path);
    twin_record rec;
    const auto prompt = tokens(45, 17, 11);
    const std::span<const std::int32_t> all(prompt);
    // Sequence 1 computes 40 tokens as a prompt and offers its two whole blocks, then goes.
    for (model::engine* e : {cpu.get(), cuda.get()}) {
        auto r = e->step(
            std::vector<model::seq_chunk>{{1, {prompt.begin(), prompt.begin() + 40}, 0, false}});
        REQUIRE(r);
        e->publish_prefix(1, all.first(40));
        e->release(1);
        CHECK(e->cached_prefix_blocks(all) == 2);
        // Sequence 2 attaches them: positions 0..31 are not computed again.
        CHECK(e->attach_prefix(2, all, 8, 8) == 2);
    }
    // Its remaining 13 tokens read the attached blocks' K/V from the device pool.
    const auto out =
        step_twins(*cpu, *cuda, {{2, {prompt.begin() + 32, prompt.end()}, 32, true}}, rec);
    std::vector<model::seq_chunk> next{{2, {argmax(out.row(0, cpu->config().n_vocab))}, 45, true}};
    (void)step_twins(*cpu, *cuda, next, rec);
    MESSAGE("rows " << rec.rows << ", max |logit diff| " << rec.max_diff);
    CHECK(rec.rows == 2);
    CHECK(rec.max_diff <= logit_tolerance);
}
