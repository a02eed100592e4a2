/* mcp_main.h — `ward mcp`'s entry point, for the front end that starts it
 * (src/front/cli.c): MCP over stdio (SPEC §21, src/dialect/mcp/). */
#ifndef WARD_MCP_MAIN_H
#define WARD_MCP_MAIN_H

/* `ward mcp [OPTIONS]` (argv[0] = "mcp"; ward serve's options: limits,
 * maxima, --languages ...): until stdin ends.  Returns the exit status. */
int ward_mcp_main(int argc, char **argv);

#endif
