/* resize.c */
int resize_placeholder(void) { return 0; }
