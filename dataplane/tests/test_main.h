// main() for the dataplane's gtest binaries: EAL in memory, no hugepages, no
// devices (rte_acl and the mempools need it), then every test.
#pragma once

#include <gtest/gtest.h>
#include <rte_eal.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

// `null_ports`: that many net_null ports (ids 0..n-1), for tests that start
// ports (the NIC model wraps real ethdevs).
inline int run_tests_with_eal(int argc, char** argv, const char* name, int null_ports = 0) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string prefix = std::string(name) + "-" + std::to_string(getpid());
  std::vector<std::string> args = {name, "--no-huge", "-m", "512", "--no-pci", "--no-shconf", "--no-telemetry",
                                   "-l", "0", "--log-level", "*:error", "--file-prefix", prefix};
  for (int i = 0; i < null_ports; i++) args.push_back("--vdev=net_null" + std::to_string(i));
  std::vector<char*> eal;
  for (auto& a : args) eal.push_back(a.data());
  if (rte_eal_init(static_cast<int>(eal.size()), eal.data()) < 0) {
    fprintf(stderr, "rte_eal_init failed\n");
    return 1;
  }
  int rc = RUN_ALL_TESTS();
  rte_eal_cleanup();
  return rc;
}
