// Devices as placements, as plain functions: the list a version runs on, where it goes after a
// placement fails, the metric's reason classes, and how routing ranks replicas on different
// devices.
#include "actors/supervisor/device_placements.hpp"

#include <doctest/doctest.h>

using namespace bitnet::actors;
using list = std::vector<std::string>;

TEST_CASE("auto expands to every CUDA device the runtime reports, and the CPU is always last") {
    CHECK(expand_placements({"auto"}, 0) == list{"cpu"});
    CHECK(expand_placements({"auto"}, 2) == list{"cuda:0", "cuda:1", "cpu"});
    CHECK(expand_placements({"cuda:1", "auto"}, 2) == list{"cuda:1", "cuda:0", "cpu"});
    CHECK(expand_placements({"cuda"}, 0) == list{"cuda:0", "cpu"});
    CHECK(expand_placements({"cuda:0", "cuda", "cuda:0"}, 1) == list{"cuda:0", "cpu"});
    CHECK(expand_placements({"sim:0"}, 0) == list{"sim:0", "cpu"});
    // Listed first, the CPU stays where it was put (and nothing after it is ever reached).
    CHECK(expand_placements({"cpu", "cuda:0"}, 1) == list{"cpu", "cuda:0"});
}

TEST_CASE("a load order's placements: auto is the server's list, a named device then the CPU") {
    const list server{"cuda:0", "cuda:1", "cpu"};
    CHECK(placements_for("auto", server, 2) == server);
    CHECK(placements_for("", server, 2) == server);
    CHECK(placements_for("cuda:1", server, 2) == list{"cuda:1", "cpu"});
    CHECK(placements_for("cuda", server, 2) == list{"cuda:0", "cpu"});
    CHECK(placements_for("cpu", server, 2) == list{"cpu"});
    CHECK(placements_for("auto", {}, 1) == list{"cuda:0", "cpu"});
}

TEST_CASE("after a failed placement comes the next one, the CPU last, and nothing after the CPU") {
    const list l{"cuda:1", "sim:0", "cpu"};
    CHECK(next_placement(l, "cuda:1") == std::optional<std::string>("sim:0"));
    CHECK(next_placement(l, "sim:0") == std::optional<std::string>("cpu"));
    CHECK_FALSE(next_placement(l, "cpu").has_value());
    // A placement not in the list (the executor resolved "auto" there) falls to the CPU.
    CHECK(next_placement(l, "cuda:0") == std::optional<std::string>("cpu"));
    CHECK(next_placement({}, "cuda:0") == std::optional<std::string>("cpu"));
    CHECK_FALSE(next_placement({}, "cpu").has_value());
}

TEST_CASE("a device failure's message gives the metric's reason class") {
    CHECK(fallback_reason_class("cuda:0: this build has no CUDA kernels") == "not_built");
    CHECK(fallback_reason_class("cuda:0: the CUDA engine is not built yet") == "not_built");
    CHECK(fallback_reason_class("cuda:0: CUDA driver version is insufficient") == "no_driver");
    CHECK(fallback_reason_class("cuda:3: no CUDA device 3 (1 present)") == "no_device");
    CHECK(fallback_reason_class("cuda:0: invalid device ordinal") == "no_device");
    CHECK(fallback_reason_class("cuda:0: out of memory allocating 1.2 GiB") == "out_of_memory");
    CHECK(fallback_reason_class("cuda:0: weight format tl2 unsupported") == "format_unsupported");
    CHECK(fallback_reason_class("something else") == "load_failed");
}

TEST_CASE("routing ranks the faster device class first, then the less outstanding work") {
    CHECK(device_speed_class("cuda:0") > device_speed_class("cpu"));
    CHECK(device_speed_class("cpu") > device_speed_class("sim:0"));
    CHECK(device_speed_class("") == device_speed_class("cpu")); // a node without devices
    // A busier GPU replica still beats an idle CPU one...
    CHECK(ranks_before({"cuda:0", 5000}, {"cpu", 0}));
    CHECK_FALSE(ranks_before({"cpu", 0}, {"cuda:1", 5000}));
    // ... and the CPU beats the simulated grid whatever its load.
    CHECK(ranks_before({"cpu", 900}, {"sim:0", 0}));
    // The same class: less work first; equal ranks are not better (the first choice stays).
    CHECK(ranks_before({"cuda:1", 10}, {"cuda:0", 20}));
    CHECK_FALSE(ranks_before({"cpu", 20}, {"cpu", 10}));
    CHECK_FALSE(ranks_before({"cpu", 10}, {"cpu", 10}));
    CHECK_FALSE(ranks_before({"cpu", 10}, {"", 10}));
}
