// SLURM-style job control: dying of the command's signal, per-step names, never blocking the command, job meta, cut recordings.
#include "support.hpp"

#include <boost/test/unit_test.hpp>

using namespace loaderlens;
using namespace loaderlens::test;

BOOST_AUTO_TEST_SUITE(job_control)

BOOST_AUTO_TEST_SUITE_END()
