// The daemon's log stream and run-time levels (dataplane/log.h): under the
// journal each line once with its "<N>" priority, nothing on stdout; levels
// set by name or glob change what is printed; bad input changes nothing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <rte_log.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "dataplane/log.h"

namespace dp {
namespace {

std::string drain(int fd) {
  std::string s;
  char b[4096];
  for (ssize_t n; (n = read(fd, b, sizeof b)) > 0;) s.append(b, static_cast<size_t>(n));
  return s;
}

// What rte_log writes while `fn` runs, through log_stream(journal), and what
// reaches stdout meanwhile.
struct Captured {
  std::string log, out;
};
template <typename F>
Captured capture(bool journal, F fn) {
  int lp[2], op[2];
  EXPECT_EQ(pipe2(lp, O_NONBLOCK), 0);
  EXPECT_EQ(pipe2(op, O_NONBLOCK), 0);
  FILE* old = rte_log_get_stream();
  FILE* s = log_stream(lp[1], journal);
  EXPECT_NE(s, nullptr);
  rte_openlog_stream(s);
  fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  dup2(op[1], STDOUT_FILENO);
  fn();
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  rte_openlog_stream(old == stderr ? nullptr : old);
  fclose(s);
  close(lp[1]);
  close(op[1]);
  Captured c{drain(lp[0]), drain(op[0])};
  close(lp[0]);
  close(op[0]);
  return c;
}

TEST(LogStream, UnderTheJournalEachLineOnceWithItsSyslogPriority) {
  log_set_level(RTE_LOG_DEBUG);
  Captured c = capture(true, [] {
    log_error(LogType::kControl, "an error");
    log_warning(LogType::kPorts, "a warning");
    log_line(LogType::kSystemd, RTE_LOG_NOTICE, "a notice");
    log_info(LogType::kOffload, "info\nwith a newline");  // one line: escaped
    log_line(LogType::kPipeline, RTE_LOG_DEBUG, "debug");
    rte_log(RTE_LOG_CRIT, RTE_LOGTYPE_EAL, "EAL: two lines\nEAL: in one message\n");
  });
  EXPECT_EQ(c.log,
            "<3>dataplane: an error\n"
            "<4>dataplane: a warning\n"
            "<5>dataplane: a notice\n"
            "<6>dataplane: offload: info\\nwith a newline\n"
            "<7>dataplane: debug\n"
            "<2>EAL: two lines\n"
            "<2>EAL: in one message\n");
  EXPECT_EQ(c.out, "") << "rte_log's lines reached stdout";
  log_set_level(RTE_LOG_ERR);
}

TEST(LogStream, OnATerminalOrFilePlainLines) {
  log_set_level(RTE_LOG_INFO);
  Captured c = capture(false, [] {
    log_error(LogType::kControl, "an error");
    log_info(LogType::kWorker, "info");
  });
  EXPECT_EQ(c.log, "dataplane: an error\ndataplane: info\n");
  EXPECT_EQ(c.out, "");
  log_set_level(RTE_LOG_ERR);
}

TEST(LogStream, JournalOnlyWhenJournalStreamNamesTheFd) {
  char path[] = "/tmp/dp-log-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  struct stat st{};
  ASSERT_EQ(fstat(fd, &st), 0);
  const std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  const char* was = getenv("JOURNAL_STREAM");
  const std::string keep = was ? was : "";
  unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(log_fd_is_journal(fd));
  setenv("JOURNAL_STREAM", mine.c_str(), 1);
  EXPECT_TRUE(log_fd_is_journal(fd));
  // stderr inherited by a child that redirected it: not the journal's.
  setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1)).c_str(), 1);
  EXPECT_FALSE(log_fd_is_journal(fd));
  setenv("JOURNAL_STREAM", (mine + "x").c_str(), 1);
  EXPECT_FALSE(log_fd_is_journal(fd));
  if (was) setenv("JOURNAL_STREAM", keep.c_str(), 1);
  else unsetenv("JOURNAL_STREAM");
  close(fd);
}

uint32_t level_of(const std::string& name) {
  for (const LogTypeLevel& t : log_types())
    if (t.name == name) return t.level;
  ADD_FAILURE() << name << " is not among log_types()";
  return 0;
}

TEST(LogLevel, EveryTypeListedAndSetByNameOrGlob) {
  for (const char* n : kLogTypeNames) EXPECT_NE(level_of(n), 0u) << n;
  EXPECT_NE(level_of("lib.eal"), 0u);
  auto set = log_set_levels("dataplane.*", "debug");
  ASSERT_TRUE(set.ok()) << set.message();
  EXPECT_EQ(set->size(), std::size(kLogTypeNames));
  for (const char* n : kLogTypeNames) EXPECT_EQ(level_of(n), RTE_LOG_DEBUG) << n;
  set = log_set_levels("dataplane.offload", "4");
  ASSERT_TRUE(set.ok()) << set.message();
  EXPECT_EQ(*set, std::vector<std::string>{"dataplane.offload"});
  EXPECT_EQ(level_of("dataplane.offload"), RTE_LOG_ERR);
  EXPECT_EQ(level_of("dataplane.control"), RTE_LOG_DEBUG);
}

TEST(LogLevel, ALevelChangesWhatIsPrinted) {
  ASSERT_TRUE(log_set_levels("dataplane.control", "warning").ok());
  Captured c = capture(true, [] {
    log_info(LogType::kControl, "hidden");
    log_warning(LogType::kControl, "shown");
  });
  EXPECT_EQ(c.log, "<4>dataplane: shown\n");
  ASSERT_TRUE(log_set_levels("dataplane.control", "info").ok());
  c = capture(true, [] { log_info(LogType::kControl, "now shown"); });
  EXPECT_EQ(c.log, "<6>dataplane: now shown\n");
  log_set_level(RTE_LOG_ERR);
}

TEST(LogLevel, BadInputNamesTheValidValuesAndChangesNothing) {
  log_set_level(RTE_LOG_INFO);
  for (const char* bad : {"verbose", "9", "0", "", "Debug"}) {
    auto r = log_set_levels("dataplane.*", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.message().find("use emerg, alert, crit, err, warning, notice, info or debug"), std::string::npos)
        << r.message();
  }
  auto r = log_set_levels("dataplane.nosuch", "debug");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("log type 'dataplane.nosuch' matches none (the daemon's: dataplane.control, "),
            std::string::npos) << r.message();
  for (const char* n : kLogTypeNames) EXPECT_EQ(level_of(n), RTE_LOG_INFO) << n;
  EXPECT_EQ(log_parse_level("error").value(), RTE_LOG_ERR);
  EXPECT_EQ(log_parse_level("8").value(), RTE_LOG_DEBUG);
  EXPECT_STREQ(log_level_name(RTE_LOG_NOTICE), "notice");
  log_set_level(RTE_LOG_ERR);
}

}  // namespace
}  // namespace dp
