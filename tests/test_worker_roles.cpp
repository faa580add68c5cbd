// Which children are workers: fork without exec, spawn code, pt_data_worker, --worker-match; real PyTorch DataLoader workers.
#include "support.hpp"

#include <boost/test/unit_test.hpp>

using namespace loaderlens;
using namespace loaderlens::test;

BOOST_AUTO_TEST_SUITE(worker_roles)

BOOST_AUTO_TEST_SUITE_END()
