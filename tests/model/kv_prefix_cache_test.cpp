// Prefix caching in the paged KV cache: the key chain, longest-prefix attach, LRU eviction of
// unreferenced indexed blocks only, and the pool accounting (parked blocks count as free).
#include "model/engine/kv_cache.hpp"

#include <doctest/doctest.h>

#include <numeric>
#include <vector>

using namespace bitnet;
using namespace bitnet::model;

namespace {

// 2 layers, 2 KV heads of 4 dims, 4 tokens per block: 256 bytes per block.
kv_cache make(std::uint32_t n_blocks) {
    kv_cache_options o;
    o.n_layer = 2;
    o.n_kv_heads = 2;
    o.head_dim = 4;
    o.block_tokens = 4;
    o.budget_bytes = n_blocks * 256ull;
    auto c = kv_cache::create(o);
    REQUIRE(c);
    return std::move(*c);
}

std::vector<std::int32_t> iota_tokens(std::size_t n, std::int32_t first) {
    std::vector<std::int32_t> t(n);
    std::iota(t.begin(), t.end(), first);
    return t;
}

// A sequence that computed `tokens` (allocates, marks every row) and published its whole blocks.
void compute_and_publish(kv_cache& c, seq_id seq, const std::vector<std::int32_t>& tokens) {
    REQUIRE(c.allocate(seq, static_cast<std::uint32_t>(tokens.size())));
    for (std::uint32_t p = 0; p < tokens.size(); ++p)
        *c.k_row(seq, 0, p) = static_cast<std::uint16_t>(tokens[p]);
    c.publish_prefix(seq, tokens);
}

} // namespace

TEST_CASE("prefix index: a key stands for the whole prefix, not the block alone") {
    const std::vector<std::int32_t> a{1, 2, 3, 4}, b{5, 6, 7, 8};
    const auto ka = prefix_index::chain(prefix_index::root, a);
    CHECK(ka == prefix_index::chain(prefix_index::root, a));
    // The same block after another parent has another key.
    CHECK(prefix_index::chain(ka, b) != prefix_index::chain(prefix_index::root, b));
    // One token changed anywhere changes the key.
    CHECK(prefix_index::chain(prefix_index::root, std::vector<std::int32_t>{1, 2, 3, 5}) != ka);

    prefix_index idx(4, 4);
    CHECK(idx.insert(0, ka, prefix_index::root, a));
    CHECK_FALSE(idx.insert(1, ka, prefix_index::root, a)); // the key is taken
    CHECK(idx.find(ka, prefix_index::root, a) == std::optional<prefix_index::block_id>{0});
    // Same key but other tokens or another parent (a collision): not a match.
    CHECK_FALSE(idx.find(ka, prefix_index::root, b));
    CHECK_FALSE(idx.find(ka, 42, a));
}

TEST_CASE("kv cache: a new sequence attaches the longest cached prefix of whole blocks") {
    auto c = make(16);
    const auto prompt = iota_tokens(10, 100); // blocks [100..103] [104..107], 2 tokens left
    compute_and_publish(c, 1, prompt);
    CHECK(c.n_blocks_indexed() == 2); // the partial third block is not indexed
    CHECK(c.cached_blocks(prompt) == 2);

    // Same first block, different second: only the first is reused.
    auto other = prompt;
    other[5] = 7;
    CHECK(c.cached_blocks(other) == 1);
    const auto free_before = c.n_blocks_free();
    CHECK(c.attach_prefix(2, other, 100) == 1);
    CHECK(c.length(2) == 4);
    CHECK(c.block_table(2)[0] == c.block_table(1)[0]);
    CHECK(c.ref_count(c.block_table(1)[0]) == 2);
    CHECK(c.n_blocks_free() == free_before); // a referenced block costs nothing to share
    // The attached rows are the first sequence's rows.
    CHECK(*c.k_row(2, 0, 3) == 103);

    // max_blocks caps the attach; a longer request continues from where it stopped.
    CHECK(c.attach_prefix(3, prompt, 1) == 1);
    CHECK(c.attach_prefix(3, prompt, 5) == 1);
    CHECK(c.length(3) == 8);
    // A sequence whose length is not whole blocks attaches nothing.
    REQUIRE(c.append(3, 1));
    CHECK(c.attach_prefix(3, prompt, 5) == 0);
    // Nothing cached: nothing attached, and no sequence is left behind.
    CHECK(c.attach_prefix(4, iota_tokens(8, 900), 5) == 0);
    CHECK_FALSE(c.contains(4));
}

TEST_CASE("kv cache: released indexed blocks count as free and are evicted least recently "
          "released first, never while referenced") {
    auto c = make(4);
    const auto a = iota_tokens(4, 10), b = iota_tokens(4, 20), d = iota_tokens(4, 30);
    compute_and_publish(c, 1, a);
    compute_and_publish(c, 2, b);
    compute_and_publish(c, 3, d);
    CHECK(c.n_blocks_free() == 1);
    c.free(1);
    c.free(2); // a released before b: a is the older
    CHECK(c.n_blocks_free() == 3);
    CHECK(c.n_blocks_indexed() == 3);
    CHECK(c.cached_blocks(a) == 1);

    // Sequence 3 still references d; taking 2 blocks uses the free one, then evicts a (LRU).
    REQUIRE(c.allocate(4, 8));
    CHECK(c.cached_blocks(a) == 0);
    CHECK(c.cached_blocks(b) == 1);
    CHECK(c.cached_blocks(d) == 1);
    CHECK(c.n_blocks_free() == 1);
    // One more evicts b; d is referenced, so the pool is then exhausted.
    REQUIRE(c.append(4, 4));
    CHECK(c.cached_blocks(b) == 0);
    CHECK(c.n_blocks_free() == 0);
    auto no = c.append(4, 4);
    REQUIRE_FALSE(no);
    CHECK(no.error().value() == errc::kv_exhausted);
    CHECK(c.cached_blocks(d) == 1);
    CHECK(*c.k_row(3, 0, 0) == 30); // d's rows untouched
}

TEST_CASE("kv cache: attaching a parked block takes it off the free count; reusing it refreshes "
          "its place in the eviction order") {
    auto c = make(3);
    const auto a = iota_tokens(4, 10), b = iota_tokens(4, 20);
    compute_and_publish(c, 1, a);
    compute_and_publish(c, 2, b);
    c.free(1);
    c.free(2);
    CHECK(c.n_blocks_free() == 3);
    CHECK(c.attach_prefix(5, a, 1) == 1);
    CHECK(c.n_blocks_free() == 2);
    c.free(5);                 // a parked again, now after b
    REQUIRE(c.allocate(6, 8)); // the free block, then the LRU one: b
    CHECK(c.cached_blocks(a) == 1);
    CHECK(c.cached_blocks(b) == 0);
}

TEST_CASE("kv cache: publishing a prefix another block already holds keeps this copy private") {
    auto c = make(8);
    const auto p = iota_tokens(8, 50);
    compute_and_publish(c, 1, p);
    compute_and_publish(c, 2, p); // computed again (e.g. both ran at once)
    CHECK(c.n_blocks_indexed() == 2);
    const auto used = c.n_blocks_used();
    c.free(2); // its private blocks go straight back to the free list
    CHECK(c.n_blocks_used() == used - 2);
    CHECK(c.cached_blocks(p) == 2);
    // A fork shares indexed blocks like any other; the keys continue for the fork.
    REQUIRE(c.fork(1, 3));
    REQUIRE(c.append(3, 4));
    auto longer = p;
    for (std::int32_t t : {1, 2, 3, 4})
        longer.push_back(t);
    c.publish_prefix(3, longer);
    CHECK(c.cached_blocks(longer) == 3);
    CHECK(c.cached_blocks(p) == 2);
}
