// main() for the dataplane's gtest binaries: EAL in memory, no hugepages, no
// devices (rte_acl and the mempools need it), then every test.
#pragma once

#include <gtest/gtest.h>
#include <rte_eal.h>
#include <unistd.h>

#include <cstdio>
#include <string>

inline int run_tests_with_eal(int argc, char** argv, const char* name) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string prefix = std::string(name) + "-" + std::to_string(getpid());
  const char* eal[] = {name, "--no-huge", "-m", "512", "--no-pci", "--no-shconf", "--no-telemetry",
                       "-l", "0", "--log-level", "*:error", "--file-prefix", prefix.c_str()};
  if (rte_eal_init(sizeof eal / sizeof eal[0], const_cast<char**>(eal)) < 0) {
    fprintf(stderr, "rte_eal_init failed\n");
    return 1;
  }
  int rc = RUN_ALL_TESTS();
  rte_eal_cleanup();
  return rc;
}
