// A raw BASP header sent to a node's cluster port, as an attacker who can reach the port would
// send it, and the node's resident memory before and after: CAF 0.17's middleman allocates the
// payload length a header announces (the guard in tools/server/basp_guard.hpp, or TLS, must stop
// that before it happens).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace bitnet::test {

/// VmRSS of process `pid` in KiB (0 when it cannot be read).
inline std::uint64_t rss_kib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stoull(line.substr(6));
    return 0;
}

/// Connects to 127.0.0.1:`port`, sends one 32-byte BASP header of operation `op` announcing
/// `payload_len` bytes (and none of them), then waits up to `wait` for the node to close the
/// connection. Returns whether it did.
inline bool send_basp_header(std::uint16_t port, std::uint8_t op, std::uint32_t payload_len,
                             std::chrono::milliseconds wait) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool closed = false;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
        std::array<unsigned char, 32> h{};
        h[0] = op;
        h[4] = static_cast<unsigned char>(payload_len >> 24);
        h[5] = static_cast<unsigned char>(payload_len >> 16);
        h[6] = static_cast<unsigned char>(payload_len >> 8);
        h[7] = static_cast<unsigned char>(payload_len);
        (void)!::send(fd, h.data(), h.size(), MSG_NOSIGNAL);
        const auto until = std::chrono::steady_clock::now() + wait;
        std::array<char, 4096> sink{};
        while (!closed && std::chrono::steady_clock::now() < until) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 100) > 0) {
                const auto n = ::recv(fd, sink.data(), sink.size(), 0);
                closed = n <= 0; // whatever the node sent first (its handshake) is read and dropped
            }
        }
    }
    ::close(fd);
    return closed;
}

} // namespace bitnet::test
