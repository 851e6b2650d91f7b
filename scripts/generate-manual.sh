#!/bin/sh
# Regenerates docs/man/jobrun.1: the commands and options from the parser (swift-argument-parser's
# generate-manual plugin), then EXIT STATUS, ENVIRONMENT and FILES from `jobrun manual-sections`,
# the same table `jobrun --help` prints from.
set -eu
cd "$(dirname "$0")/.."
date=${MANUAL_DATE:-$(date -u +%Y-%m-%d)}
swift package generate-manual --date "$date"
swift build --product jobrun
page=.build/plugins/GenerateManual/outputs/jobrun/jobrun.1
sed '/^\.Sh "EXIT STATUS"/,$d' "$page" > docs/man/jobrun.1
.build/debug/jobrun manual-sections >> docs/man/jobrun.1
