// Paged KV cache: budget arithmetic, growth across block boundaries, exhaustion without side
// effects, freeing, forks sharing blocks and copy-on-write of a shared partly filled block; prefix
// caching: the key chain, longest-prefix attach, LRU eviction of unreferenced indexed blocks only,
// and the pool accounting (parked blocks count as free); the device mode: no host pool, tile and
// row offsets with the host layout's arithmetic, copy-on-write recorded for the owner to perform.
#include "model/engine/kv_cache.hpp"

#include <doctest/doctest.h>

#include <numeric>
#include <set>
#include <vector>

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

/// `device`: the device mode (no host pool, copy-on-write recorded).
kv_cache make(std::uint32_t n_blocks, bool device = false) {
    auto o = small_opts(n_blocks);
    o.device_pool = device;
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

TEST_CASE("kv cache: cached blocks are shared only within their cache scope") {
    auto c = make(16);
    const auto prompt = iota_tokens(8, 100);
    // Computed and published in scope 7 (a tenant): scope 7 finds both blocks, others none.
    REQUIRE(c.allocate(1, 8));
    c.publish_prefix(1, prompt, 7);
    CHECK(c.cached_blocks(prompt, 7) == 2);
    CHECK(c.cached_blocks(prompt) == 0);
    CHECK(c.cached_blocks(prompt, 8) == 0);
    CHECK(c.attach_prefix(2, prompt, 5, 0xffffffffu, 8) == 0);
    CHECK_FALSE(c.contains(2));
    CHECK(c.attach_prefix(3, prompt, 5, 0xffffffffu, 7) == 2);
    CHECK(c.block_table(3)[1] == c.block_table(1)[1]);
    // The shared scope (0) is its own: a block published there is not scope 7's either.
    REQUIRE(c.allocate(4, 8));
    c.publish_prefix(4, prompt);
    CHECK(c.cached_blocks(prompt) == 2);
    CHECK(c.attach_prefix(5, prompt, 5) == 2);
    CHECK(c.block_table(5)[0] == c.block_table(4)[0]);
    CHECK(c.block_table(5)[0] != c.block_table(1)[0]);
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

TEST_CASE("kv cache: attaching a parked block takes it off the free count, reusing it refreshes "
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

TEST_CASE("kv cache device mode: no host pool, offsets as the host layout's pointers") {
    auto dev = make(4, true);
    auto host = make(4, false);
    CHECK_FALSE(dev.has_host_pool());
    CHECK(host.has_host_pool());
    CHECK(dev.pool_bytes() == host.pool_bytes()); // the size the owner allocates on the device
    REQUIRE(dev.allocate(7, 6));
    REQUIRE(host.allocate(7, 6));
    CHECK(dev.k_row(7, 1, 5) == nullptr);
    CHECK(dev.k_tile(0, 0) == nullptr);
    CHECK(dev.layer_view(7, 0).k_blocks[0] == nullptr);
    const std::uint16_t* base = host.k_tile(0, 0);
    for (std::uint32_t layer = 0; layer < 2; ++layer)
        for (std::uint32_t pos = 0; pos < 6; ++pos) {
            CAPTURE(layer);
            CAPTURE(pos);
            CHECK(dev.k_row_offset(7, layer, pos) ==
                  static_cast<std::uint64_t>(host.k_row(7, layer, pos) - base));
            CHECK(dev.v_row_offset(7, layer, pos) ==
                  static_cast<std::uint64_t>(host.v_row(7, layer, pos) - base));
        }
    for (kv_cache::block_id b : dev.block_table(7))
        for (std::uint32_t layer = 0; layer < 2; ++layer) {
            CHECK(dev.k_tile_offset(b, layer) ==
                  static_cast<std::uint64_t>(host.k_tile(b, layer) - base));
            CHECK(dev.v_tile_offset(b, layer) ==
                  static_cast<std::uint64_t>(host.v_tile(b, layer) - base));
            // One table of layer-0 offsets serves every layer, the pool's base moved.
            CHECK(dev.k_tile_offset(b, layer) == dev.k_tile_offset(b, 0) + dev.layer_offset(layer));
        }
}

TEST_CASE("kv cache device mode: copy-on-write is recorded as (source, destination) pairs") {
    auto c = make(8, true);
    REQUIRE(c.allocate(1, 6)); // block A full, block B holds 2 of 4
    const auto a = c.block_table(1)[0];
    const auto b = c.block_table(1)[1];
    CHECK(c.take_pending_copies().empty()); // nothing shared, nothing to copy
    REQUIRE(c.fork(1, 2));
    CHECK(c.take_pending_copies().empty()); // a fork copies nothing

    REQUIRE(c.append(2, 1));
    const auto b2 = c.block_table(2)[1];
    CHECK(b2 != b);
    CHECK(c.block_table(2)[0] == a);
    CHECK(c.ref_count(b) == 1);
    const auto copies = c.take_pending_copies();
    REQUIRE(copies.size() == 1);
    CHECK(copies[0].src == b);
    CHECK(copies[0].dst == b2);
    CHECK(c.take_pending_copies().empty()); // taken once

    // Appends that copy nothing record nothing; several copies keep their order.
    REQUIRE(c.append(1, 1));
    CHECK(c.take_pending_copies().empty());
    REQUIRE(c.fork(1, 3));
    REQUIRE(c.fork(2, 4));
    REQUIRE(c.append(3, 1));
    REQUIRE(c.append(4, 1));
    const auto two = c.take_pending_copies();
    REQUIRE(two.size() == 2);
    CHECK(two[0].src == b);
    CHECK(two[0].dst == c.block_table(3)[1]);
    CHECK(two[1].src == b2);
    CHECK(two[1].dst == c.block_table(4)[1]);

    // A host-pool cache copies at once and records nothing.
    auto host = make(8, false);
    REQUIRE(host.allocate(1, 6));
    REQUIRE(host.fork(1, 2));
    REQUIRE(host.append(2, 1));
    CHECK(host.take_pending_copies().empty());
}

TEST_CASE("kv cache: dropping rejected draft positions leaves the cached prompt blocks and the "
          "free count as if the drafts were never appended") {
    auto c = make(16);
    const auto prompt = iota_tokens(10, 100); // 2 whole blocks indexed, 2 prompt tokens past them
    compute_and_publish(c, 1, prompt);
    const auto free_after_prompt = c.n_blocks_free();
    const auto indexed = c.n_blocks_indexed();
    // A verification step appends the last token and 7 drafts: positions 10..17, two new
    // blocks; 2 drafts accepted, 5 dropped.
    REQUIRE(c.append(1, 8));
    CHECK(c.n_blocks_free() == free_after_prompt - 2);
    REQUIRE(c.truncate(1, 5));
    CHECK(c.length(1) == 13);
    CHECK(c.block_table(1).size() == 4); // 13 positions in blocks of 4
    CHECK(c.n_blocks_free() == free_after_prompt - 1);
    // The prompt's blocks stay indexed and serve a new sequence with the same prompt.
    CHECK(c.n_blocks_indexed() == indexed);
    CHECK(c.cached_blocks(prompt) == 2);
    CHECK(c.attach_prefix(2, prompt, 5) == 2);
    CHECK(*c.k_row(2, 0, 7) == 107);
    // Dropping everything past the prompt and freeing returns every private block.
    REQUIRE(c.truncate(1, 3));
    c.free(1);
    c.free(2);
    CHECK(c.n_blocks_used() == 0);
    CHECK(c.cached_blocks(prompt) == 2); // parked, still indexed
}

TEST_CASE("kv cache: a Q8_0 pool takes 17/32 of the bytes per block, and needs whole Q8_0 "
          "blocks per head") {
    auto o = small_opts(8);
    o.head_dim = 32;
    o.budget_bytes = 1 << 20;
    const auto f16 = kv_cache::block_bytes(o);
    o.q8_0 = true;
    CHECK(kv_cache::block_bytes(o) * 32 == f16 * 17);
    CHECK(kv_cache::row_halves(o) == 2 * 17);
    auto c = kv_cache::create(o);
    REQUIRE(c);
    CHECK(c->n_blocks_total() == (1u << 20) / kv_cache::block_bytes(o));
    o.head_dim = 48; // not a multiple of 32
    CHECK(kv_cache::create(o).error().value() == bitnet::errc::unsupported);
}
