// The one Catch2 main() for build/host/unit_tests (every tests/host/*.cpp
// links into it). Catch2 v2 has no "skipped" result, so a test that lacks
// its data calls KAI_SKIP(msg) (test_skip.h): it WARNs and returns, and this
// main marks that test case <skipped> in the JUnit file tests/run_all.py
// reads, so a missing model is reported as skipped, never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <stdio.h>

#include <string>
#include <utility>
#include <vector>

#include "test_skip.h"

namespace {

std::vector<std::pair<std::string, std::string>>& skipped() {
  static std::vector<std::pair<std::string, std::string>> v;
  return v;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

void mark_skipped_in_junit(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) return;
  std::string xml;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) xml.append(buf, n);
  fclose(f);
  for (const auto& s : skipped()) {
    std::string key = "name=\"" + xml_escape(s.first) + "\"";
    size_t at = xml.find(key);
    if (at == std::string::npos) continue;
    size_t end = xml.find('>', at);
    if (end == std::string::npos) continue;
    std::string tag = "<skipped message=\"" + xml_escape(s.second) + "\"/>";
    if (xml[end - 1] == '/') xml.replace(end - 1, 2, ">" + tag + "</testcase>");
    else xml.insert(end + 1, tag);
  }
  f = fopen(path.c_str(), "wb");
  if (!f) return;
  fwrite(xml.data(), 1, xml.size(), f);
  fclose(f);
}

}  // namespace

void kai_record_skip(const std::string& why) {
  skipped().emplace_back(Catch::getResultCapture().getCurrentTestName(), why);
}

// The JUnit file the command line asked for ("-r junit -o FILE"), or "".
std::string junit_output(const Catch::ConfigData& cfg) {
#if CATCH_VERSION_MAJOR >= 3
  for (const auto& spec : cfg.reporterSpecifications)
    if (spec.name() == "junit") return spec.outputFile() ? *spec.outputFile() : cfg.defaultOutputFilename;
  return "";
#else
  return cfg.reporterName == "junit" ? cfg.outputFilename : "";
#endif
}

int main(int argc, char** argv) {
  Catch::Session session;
  int rc = session.applyCommandLine(argc, argv);
  if (rc != 0) return rc;
  rc = session.run();
  const auto& cfg = session.configData();
  if (!skipped().empty()) {
    fprintf(stderr, "%zu test case(s) skipped for missing data:\n", skipped().size());
    for (const auto& s : skipped()) fprintf(stderr, "  SKIPPED %s: %s\n", s.first.c_str(), s.second.c_str());
    if (std::string out = junit_output(cfg); !out.empty()) mark_skipped_in_junit(out);
  }
  return rc;
}
