package liveview

// The size of a machine's cell, for the browser tests (package
// liveview_test, which runs a daemon: the daemon imports this package).
const CellW, CellH = cellW, cellH
