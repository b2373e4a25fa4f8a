// The doctest main shared by every test executable. CTest runs each TEST_CASE through a
// --test-case filter; a name CTest cannot pass whole (a ';' splits it into two list items) would
// select nothing, and doctest passes a run of no test cases. Such a run fails here instead, so a
// test that never ran cannot count as passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

namespace {

/// Counts the test cases that started (a listener beside the console reporter).
struct started_counter : doctest::IReporter {
    static inline int started = 0;
    explicit started_counter(const doctest::ContextOptions&) {}
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
    void test_case_start(const doctest::TestCaseData&) override { ++started; }
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("started_counter", 1, started_counter);

} // namespace

int main(int argc, char** argv) {
    doctest::Context context(argc, argv);
    const int rc = context.run();
    if (context.shouldExit())
        return rc;
    bool filtered = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a(argv[i]);
        filtered = filtered || a.rfind("--test-case=", 0) == 0 || a.rfind("-tc=", 0) == 0;
    }
    if (rc == 0 && filtered && started_counter::started == 0) {
        std::fprintf(stderr, "no test case matches the --test-case filter (a test name with ';' "
                             "is split by CTest: use another separator)\n");
        return 1;
    }
    return rc;
}
