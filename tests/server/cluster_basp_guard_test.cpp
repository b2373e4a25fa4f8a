// The cluster port in insecure mode: a raw BASP header that announces 1 GiB (sent by anyone who
// can reach the port, before any handshake) is refused by the guard before CAF's middleman reads
// it, so the node's memory stays where it was; the node goes on serving. (Over TLS the same
// header never gets past the TLS handshake: cluster_tls_test.cpp.)
#include "server/basp_probe.hpp"
#include "server/cluster_process.hpp"

using namespace bitnet;
using namespace bitnet::test;

TEST_CASE("cluster insecure: a raw BASP header announcing 1 GiB is refused, RSS stays within "
          "10 MiB") {
    scratch_dir dir;
    cluster_node a("a",
                   {"--cluster-listen", "127.0.0.1:0", "--cluster-insecure",
                    "--cluster-insecure-acknowledged", "--threads", "1"},
                   "", dir.file("a.log"));
    REQUIRE(eventually([&] { return a.get("/v1/cluster").status == 200; }));
    const auto before = rss_kib(a.pid());
    REQUIRE(before > 0);
    // A client handshake and a direct message, each claiming 1 GiB of payload.
    for (const std::uint8_t op : {std::uint8_t{0x01}, std::uint8_t{0x02}})
        CHECK_MESSAGE(send_basp_header(a.cluster_port(), op, 1u << 30, std::chrono::seconds(5)),
                      "the node kept the connection open: " << a.log());
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto after = rss_kib(a.pid());
    CHECK_MESSAGE(after < before + 10 * 1024,
                  "RSS " << before << " KiB before, " << after << " KiB after");
    // Both refused by the guard, counted (each connection closed once).
    CHECK_MESSAGE(eventually([&] { return a.refusals("basp") == 2; }), a.log());
    CHECK(a.alive());
    CHECK(a.get("/v1/cluster").status == 200);
}
