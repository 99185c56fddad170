// Package layers holds the test that keeps ckegen's packages in their
// layers (docs/design.md, Architecture): commands above the loop and the
// views, those above the input path, that above the generator, the
// generator above the models, and the edges beside the models; the test
// that the views decide only through the decision; and the budget of the
// tick's path (tick and decision). It has no code of its own.
package layers
