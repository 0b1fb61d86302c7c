// The cvattn command-line tool: the contract is docs/cli.md; the work is in cli.cpp.
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"

int main(int argc, char** argv) {
  return cvattn::cli::main_entry(std::vector<std::string>(argv + 1, argv + argc), std::cout,
                                 std::cerr);
}
