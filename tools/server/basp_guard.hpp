// The cluster port's guard in insecure mode. CAF 0.17's middleman reads a BASP header (32 bytes)
// and then allocates the payload length the header announces before it reads a byte of it: one
// header claiming 1 GiB, sent by anyone who can reach the port, costs the process 1 GiB (and the
// middleman does nothing else while it zeroes it). CAF offers no hook into that read, so in
// insecure mode the guard owns the cluster port and forwards each connection to the middleman,
// which listens on a loopback port of its own, reading every header on the way in first: before
// the peer's handshake a payload may announce at most `handshake_bytes`, after it at most
// `message_bytes`; a connection that announces more is closed before the header reaches CAF.
// The guard itself never holds more than one read buffer per direction and connection.
// Over TLS the guard is not needed: nothing reaches BASP before the mutual TLS handshake.
#pragma once

#include "common/error.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace bitnet::server {

struct basp_guard_limits {
    std::uint32_t handshake_bytes = 64 * 1024; ///< a client handshake: node id, app ids, actor
    std::uint32_t message_bytes = 256u << 20;  ///< any later message (prompts, stream batches)
};

class basp_guard {
public:
    /// Listens on `host`:`port` (0: the OS picks) and forwards every connection to the
    /// middleman at 127.0.0.1:`upstream_port`, on a thread of its own. `on_refused` runs (on
    /// that thread) for each connection closed for a header past the limits.
    [[nodiscard]] static result<std::unique_ptr<basp_guard>>
    start(const std::string& host, std::uint16_t port, std::uint16_t upstream_port,
          basp_guard_limits limits = {}, std::function<void()> on_refused = {});
    ~basp_guard();
    basp_guard(const basp_guard&) = delete;
    basp_guard& operator=(const basp_guard&) = delete;

    /// The port peers dial.
    [[nodiscard]] std::uint16_t port() const noexcept;

    struct impl;

private:
    explicit basp_guard(std::unique_ptr<impl> p);
    std::unique_ptr<impl> impl_;
};

/// Reads the BASP byte stream of one direction and checks each header's payload length against
/// the limits (plain, no I/O: the guard's parser, tested on its own).
class basp_header_check {
public:
    explicit basp_header_check(basp_guard_limits limits)
        : limits_(limits) {}
    /// Feeds the next `n` bytes; false (with why()) when a header announces more than allowed.
    [[nodiscard]] bool feed(const unsigned char* data, std::size_t n);
    [[nodiscard]] const std::string& why() const noexcept { return why_; }

private:
    basp_guard_limits limits_;
    unsigned char header_[32] = {};
    std::size_t header_have_ = 0;
    std::uint64_t payload_left_ = 0;
    bool handshaken_ = false;   ///< a client handshake went through
    bool in_handshake_ = false; ///< the payload being read is the client handshake's
    std::string why_;
};

} // namespace bitnet::server
