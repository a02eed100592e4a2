/* judge_cli.h — `ward judge` and `ward languages` (judge_cli.c, ward-net's;
 * the lean `ward` execs ward-net for them).  argv[0] is the command's name;
 * each returns the exit status. */
#ifndef WARD_JUDGE_CLI_H
#define WARD_JUDGE_CLI_H

int ward_judge_main(int argc, char **argv);
int ward_languages_main(int argc, char **argv);

#endif
