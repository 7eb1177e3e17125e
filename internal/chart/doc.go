// Package chart draws the project's figures (the benchmark plots and the
// convergence picture of the dead-reckoning docs) with gonum's plot
// package, in one house style, and writes them as SVG.
//
// A figure is one or more panels stacked top to bottom; each panel holds
// lines, bars and marks in data coordinates. The output depends only on the
// input, so drawing the same figure again gives the same bytes.
package chart
