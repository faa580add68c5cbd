// Access patterns: index sequences, batching, worker assignment (being written).
#include <boost/test/unit_test.hpp>
BOOST_AUTO_TEST_SUITE(patterns)
BOOST_AUTO_TEST_CASE(placeholder) { BOOST_TEST(true); }
BOOST_AUTO_TEST_SUITE_END()
