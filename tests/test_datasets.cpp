// Datasets: .npy header reading and writing, raw and LMDB layouts, mkdata (being written).
#include <boost/test/unit_test.hpp>
BOOST_AUTO_TEST_SUITE(datasets)
BOOST_AUTO_TEST_CASE(placeholder) { BOOST_TEST(true); }
BOOST_AUTO_TEST_SUITE_END()
