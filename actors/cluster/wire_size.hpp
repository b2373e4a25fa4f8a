// The size a message value has on the wire (CAF's binary serialization, which the middleman's
// BASP frames carry), for the per-link byte counters of a cluster.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/binary_serializer.hpp>

#include <cstdint>
#include <vector>

namespace bitnet::actors {

template <class T>
[[nodiscard]] std::uint64_t wire_size(caf::actor_system& sys, const T& value) {
    std::vector<char> buf;
    caf::binary_serializer out{sys, buf};
    // The serializer takes a mutable reference (inspect overloads are shared with loading).
    if (out(const_cast<T&>(value)))
        return 0;
    return buf.size();
}

} // namespace bitnet::actors
