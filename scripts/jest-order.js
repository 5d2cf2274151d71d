// A jest test sequencer (`--testSequencer`): runs the files in the order they are named on jest's command line
// (`--runTestsByPath a b c`), files not named there after them in name order. Jest's own order is by the durations
// in its cache and, with no cache (a fresh clone: CI), by file size: the real-API lane's longest suite
// (kubevirt-real, 3-6 minutes) then started fifth of fifteen on one of the lane's two workers and ended the lane
// late. Jest hands the files to its workers in this order as each becomes free, so scripts/run-tests.js names
// them longest first and the workers end together (issue 53). The order changes nothing a suite sees: each starts
// its own control planes and writes only in its own directories.
'use strict';
const path = require('path');
const Sequencer = require('@jest/test-sequencer').default;

class CommandLineOrder extends Sequencer {
  sort(tests) {
    const named = process.argv.slice(2).map((a) => path.resolve(a));
    const rank = (t) => { const i = named.indexOf(t.path); return i < 0 ? named.length : i; };
    return [...tests].sort((a, b) => rank(a) - rank(b) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
}

module.exports = CommandLineOrder;
