/* decode.c */
int decode_placeholder(void) { return 0; }
