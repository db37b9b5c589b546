/** The package version, written on every container's labels. A unit test pins it to package.json. */
export const PACKAGE_VERSION = '0.1.0';
