// Paged KV cache: budget arithmetic, growth across block boundaries, exhaustion without side
// effects, freeing, forks sharing blocks and copy-on-write of a shared partly filled block.
#include "model/engine/kv_cache.hpp"

#include <doctest/doctest.h>

#include <set>

using namespace bitnet;
using namespace bitnet::model;

namespace {

// 2 layers, 2 KV heads of 4 dims, 4 tokens per block: 2*2*4*2*4*2 = 256 bytes per block.
kv_cache_options small_opts(std::uint32_t n_blocks) {
    kv_cache_options o;
    o.n_layer = 2;
    o.n_kv_heads = 2;
    o.head_dim = 4;
    o.block_tokens = 4;
    o.budget_bytes = n_blocks * 256ull;
    return o;
}

kv_cache make(std::uint32_t n_blocks) {
    auto c = kv_cache::create(small_opts(n_blocks));
    REQUIRE(c);
    return std::move(*c);
}

} // namespace

TEST_CASE("kv cache: byte budget -> block count") {
    auto o = small_opts(10);
    CHECK(kv_cache::block_bytes(o) == 256);
    o.budget_bytes = 10 * 256 + 255; // a partial block is not a block
    auto c = kv_cache::create(o);
    REQUIRE(c);
    CHECK(c->n_blocks_total() == 10);
    CHECK(c->n_blocks_free() == 10);
    CHECK(c->pool_bytes() == 2560);

    // The 2B-4T shape: 30 layers, 5 KV heads, head_dim 128, 16 tokens: 614,400 bytes per block.
    kv_cache_options big{30, 5, 128, 16, 0};
    CHECK(kv_cache::block_bytes(big) == 2ull * 30 * 16 * 5 * 128 * 2);

    o.budget_bytes = 255;
    auto too_small = kv_cache::create(o);
    REQUIRE_FALSE(too_small);
    CHECK(too_small.error().value() == errc::invalid_argument);
    o.budget_bytes = 4096;
    o.head_dim = 0;
    CHECK_FALSE(kv_cache::create(o));
}

TEST_CASE("kv cache: append grows the block table across block boundaries") {
    auto c = make(8);
    REQUIRE(c.allocate(1, 3));
    CHECK(c.length(1) == 3);
    CHECK(c.block_table(1).size() == 1);
    REQUIRE(c.append(1, 1)); // exactly fills block 0
    CHECK(c.block_table(1).size() == 1);
    REQUIRE(c.append(1, 1)); // position 4 opens block 1
    CHECK(c.block_table(1).size() == 2);
    REQUIRE(c.append(1, 9)); // 14 tokens -> 4 blocks
    CHECK(c.length(1) == 14);
    CHECK(c.block_table(1).size() == 4);
    CHECK(c.n_blocks_used() == 4);
    CHECK(c.blocks_needed(1, 2) == 0); // 16 still fits the 4th block
    CHECK(c.blocks_needed(1, 3) == 1);

    // Distinct blocks, each referenced once.
    std::set<kv_cache::block_id> ids(c.block_table(1).begin(), c.block_table(1).end());
    CHECK(ids.size() == 4);
    for (auto b : ids)
        CHECK(c.ref_count(b) == 1);

    // append on an unknown sequence creates it; allocate on a known one is refused.
    REQUIRE(c.append(2, 1));
    CHECK(c.contains(2));
    CHECK(c.allocate(2, 1).error().value() == errc::invalid_argument);
}

TEST_CASE("kv cache: rows land in [block_tokens][n_kv_heads][head_dim] tiles per layer") {
    auto c = make(4);
    REQUIRE(c.allocate(7, 6));
    const auto table = c.block_table(7);
    // Position 5, layer 1: block table[1], row 1 of the tile, 2*4 halves per row.
    CHECK(c.k_row(7, 1, 5) == c.k_tile(table[1], 1) + 1 * 8);
    CHECK(c.v_row(7, 1, 5) == c.v_tile(table[1], 1) + 1 * 8);
    // Tiles of one block: K then V per layer, layers back to back.
    CHECK(c.v_tile(table[0], 0) == c.k_tile(table[0], 0) + 4 * 8);
    CHECK(c.k_tile(table[0], 1) == c.k_tile(table[0], 0) + 2 * 4 * 8);

    c.k_row(7, 1, 5)[3] = 0x3c00;
    auto view = c.layer_view(7, 1);
    CHECK(view.n_tokens == 6);
    REQUIRE(view.k_blocks.size() == 2);
    REQUIRE(view.v_blocks.size() == 2);
    CHECK(view.k_blocks[1][1 * 8 + 3] == 0x3c00);
    CHECK(c.layer_view(99, 0).k_blocks.empty());
}

TEST_CASE("kv cache: exhaustion fails with kv_exhausted and changes nothing") {
    auto c = make(3);
    REQUIRE(c.allocate(1, 6)); // 2 blocks
    CHECK_FALSE(c.can_append(1, 7));
    CHECK(c.can_append(1, 6)); // exactly the last block
    auto before_table =
        std::vector<kv_cache::block_id>(c.block_table(1).begin(), c.block_table(1).end());

    auto r = c.append(1, 7);
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::kv_exhausted);
    CHECK(c.length(1) == 6);
    CHECK(std::vector<kv_cache::block_id>(c.block_table(1).begin(), c.block_table(1).end()) ==
          before_table);
    CHECK(c.n_blocks_free() == 1);

    auto r2 = c.allocate(2, 5); // needs 2 blocks, 1 free
    REQUIRE_FALSE(r2);
    CHECK(r2.error().value() == errc::kv_exhausted);
    CHECK_FALSE(c.contains(2));
    CHECK(c.n_blocks_free() == 1);
}

TEST_CASE("kv cache: free returns every block, truncate returns the unused tail") {
    auto c = make(6);
    REQUIRE(c.allocate(1, 9));  // 3 blocks
    REQUIRE(c.allocate(2, 12)); // 3 blocks
    CHECK(c.n_blocks_free() == 0);
    c.free(1);
    CHECK(c.n_blocks_free() == 3);
    CHECK_FALSE(c.contains(1));
    c.free(1); // twice: harmless
    CHECK(c.n_blocks_free() == 3);

    REQUIRE(c.truncate(2, 7)); // 12 -> 5 tokens: 2 blocks
    CHECK(c.length(2) == 5);
    CHECK(c.n_blocks_free() == 4);
    CHECK(c.truncate(2, 6).error().value() == errc::invalid_argument);
    c.free(2);
    CHECK(c.n_blocks_free() == 6);
    CHECK(c.n_sequences() == 0);
}

TEST_CASE("kv cache: fork shares blocks by reference count, copy on write of the partial block") {
    auto c = make(8);
    REQUIRE(c.allocate(1, 6)); // block A full, block B holds 2 of 4
    const auto a = c.block_table(1)[0];
    const auto b = c.block_table(1)[1];
    c.k_row(1, 0, 5)[0] = 0x1234;
    c.v_row(1, 1, 4)[7] = 0x4321;

    REQUIRE(c.fork(1, 2));
    CHECK(c.n_blocks_used() == 2); // nothing copied yet
    CHECK(c.ref_count(a) == 2);
    CHECK(c.ref_count(b) == 2);
    CHECK(c.length(2) == 6);
    CHECK(c.fork(1, 2).error().value() == errc::invalid_argument);
    CHECK(c.fork(9, 3).error().value() == errc::not_found);

    // The child's first append writes into the shared partial block: it needs a private copy.
    CHECK(c.blocks_needed(2, 1) == 1);
    REQUIRE(c.append(2, 1));
    const auto b2 = c.block_table(2)[1];
    CHECK(b2 != b);
    CHECK(c.block_table(2)[0] == a); // the full block stays shared
    CHECK(c.ref_count(a) == 2);
    CHECK(c.ref_count(b) == 1);
    CHECK(c.ref_count(b2) == 1);
    CHECK(c.k_row(2, 0, 5)[0] == 0x1234); // data copied for every layer
    CHECK(c.v_row(2, 1, 4)[7] == 0x4321);
    c.k_row(2, 0, 6)[0] = 0x7777; // and the parent does not see the child's rows
    CHECK(c.k_tile(b, 0)[2 * 8] != 0x7777);

    // The parent is now sole owner of its partial block: appends in place.
    CHECK(c.blocks_needed(1, 1) == 0);
    REQUIRE(c.append(1, 1));
    CHECK(c.block_table(1)[1] == b);

    c.free(1);
    CHECK(c.ref_count(a) == 1);
    CHECK(c.ref_count(b) == 0);
    c.free(2);
    CHECK(c.n_blocks_free() == 8);
}

TEST_CASE("kv cache: copy-on-write counts against exhaustion") {
    auto c = make(2);
    REQUIRE(c.allocate(1, 2));
    REQUIRE(c.fork(1, 2));
    REQUIRE(c.append(2, 1)); // takes the last free block for its copy
    CHECK(c.n_blocks_free() == 0);
    // Parent's partial block is no longer shared: appending within it needs nothing.
    CHECK(c.can_append(1, 2));
    REQUIRE(c.fork(1, 3));
    auto r = c.append(3, 1); // needs a copy, none free
    REQUIRE_FALSE(r);
    CHECK(r.error().value() == errc::kv_exhausted);
    CHECK(c.length(3) == 2);
    CHECK(c.block_table(3)[0] == c.block_table(1)[0]);
}
