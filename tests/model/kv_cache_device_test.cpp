// The KV cache's device mode: the bookkeeping of the host mode without a host pool, tile and row
// offsets with the host layout's arithmetic, and copy-on-write copies recorded for the owner to
// perform on the device instead of done at once.
#include "model/engine/kv_cache.hpp"

#include <doctest/doctest.h>

#include <cstdint>

using namespace bitnet;
using namespace bitnet::model;

namespace {

// 2 layers, 2 KV heads of 4 dims, 4 tokens per block: 256 bytes per block.
kv_cache make(std::uint32_t n_blocks, bool device) {
    kv_cache_options o;
    o.n_layer = 2;
    o.n_kv_heads = 2;
    o.head_dim = 4;
    o.block_tokens = 4;
    o.budget_bytes = n_blocks * 256ull;
    o.device_pool = device;
    auto c = kv_cache::create(o);
    REQUIRE(c);
    return std::move(*c);
}

} // namespace

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
