// Does nothing the protocol asks: never connects, prints nothing, exits 0.
process.exit(0);
